import { describe, expect, it } from "vitest";
import { baseEnv, ConfigError, loadConfig, naming, port, rpcUrl } from "./index.js";

describe("configuration (docs/operations.md §Configuration: parsed once with zod; a bad value names the variable)", () => {
  const schema = baseEnv.extend({ CRM_PORT: port.default(7001) });

  it("applies the defaults of docs/operations.md §Configuration", () => {
    const c = loadConfig(schema, {});
    expect(c).toMatchObject({
      DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postgres",
      REDIS_URL: "redis://127.0.0.1:6379",
      NATS_URL: "nats://127.0.0.1:4222",
      NATS_STREAM_REPLICAS: 1,
      CRM_PORT: 7001,
    });
  });

  it("a bad value stops with a message naming the variable", () => {
    expect(() => loadConfig(schema, { CRM_PORT: "abc" })).toThrow(ConfigError);
    expect(() => loadConfig(schema, { CRM_PORT: "abc" })).toThrow(/CRM_PORT/);
    expect(() => loadConfig(schema, { FUNIL_ENV: "Bad Env" })).toThrow(/FUNIL_ENV/);
    // JetStream keeps 1 to 5 copies of a stream.
    for (const bad of ["0", "6", "two"])
      expect(() => loadConfig(schema, { NATS_STREAM_REPLICAS: bad })).toThrow(/NATS_STREAM_REPLICAS/);
  });

  it("docs/operations.md §Configuration FUNIL_ENV: databases funil_<env>_<service>, streams <ENV>_<NAME>, subjects prefixed <env>.", () => {
    expect(naming("test")).toMatchObject({});
    const n = naming("test");
    expect(n.database("crm")).toBe("funil_test_crm");
    expect(n.stream("EVENTS")).toBe("TEST_EVENTS");
    expect(n.subject("ingest.call")).toBe("test.ingest.call");
    const prod = naming(undefined);
    expect([prod.database("crm"), prod.stream("EVENTS"), prod.subject("events.x")]).toEqual([
      "funil_crm",
      "EVENTS",
      "events.x",
    ]);
  });

  it("docs/operations.md §Configuration, CURSOR_KEYS: a comma-separated list of keys of 16 characters or more, unset when empty", () => {
    const a = "a".repeat(16);
    const b = "b".repeat(32);
    expect(loadConfig(schema, { CURSOR_KEYS: ` ${a} , ${b} ` }).CURSOR_KEYS).toEqual([a, b]);
    expect(loadConfig(schema, {}).CURSOR_KEYS).toBeUndefined();
    expect(loadConfig(schema, { CURSOR_KEYS: "" }).CURSOR_KEYS).toBeUndefined();
    expect(() => loadConfig(schema, { CURSOR_KEYS: `${a},short` })).toThrow(/CURSOR_KEYS/);
  });

  it("<NAME>_URL: one base URL, several separated by commas, or a host name; anything else names the variable", () => {
    const schema = baseEnv.extend({ CRM_URL: rpcUrl.default("http://127.0.0.1:7001") });
    expect(loadConfig(schema, {}).CRM_URL).toBe("http://127.0.0.1:7001");
    expect(loadConfig(schema, { CRM_URL: " http://10.0.0.1:7001, http://10.0.0.2:7001 " }).CRM_URL).toBe(
      "http://10.0.0.1:7001, http://10.0.0.2:7001",
    );
    expect(loadConfig(schema, { CRM_URL: "http://crm-headless:7001" }).CRM_URL).toBe(
      "http://crm-headless:7001",
    );
    for (const bad of ["crm:7001", "http://a:1,,http://b:1", "https://crm:7001", "http://a:1,nope"])
      expect(() => loadConfig(schema, { CRM_URL: bad })).toThrow(/CRM_URL/);
    expect(loadConfig(schema, {})).toMatchObject({
      RPC_RESOLVE_MS: 5000,
      RPC_MAX_CONNECTION_AGE_MS: 300_000,
      RPC_KEEPALIVE_MS: 10_000,
      RPC_MAX_MESSAGE_BYTES: 64 * 1024 * 1024,
    });
    expect(loadConfig(schema, {}).METRICS_PORT).toBeUndefined();
    expect(() => loadConfig(schema, { RPC_KEEPALIVE_MS: "0" })).toThrow(/RPC_KEEPALIVE_MS/);
    expect(() => loadConfig(schema, { RPC_MAX_MESSAGE_BYTES: "1000" })).toThrow(/RPC_MAX_MESSAGE_BYTES/);
    expect(loadConfig(schema, { METRICS_PORT: "9464" }).METRICS_PORT).toBe(9464);
  });
});
