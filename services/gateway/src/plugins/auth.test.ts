import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { systemClock as clock, naming } from "@funil/config";
import { migrate, openDatabase, type Sql, SYSTEM } from "@funil/db";
import { openRedis } from "@funil/db/redis";
import Fastify, { type FastifyInstance } from "fastify";
import type { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyResolver, keyResolver } from "../key-cache.js";
import { generateKey, hashKey } from "../keys.js";
import { keyStoreOf } from "../server.js";
import type { KeyStore } from "../store/keys.js";
import { authPlugin } from "./auth.js";
import { errorsPlugin } from "./errors.js";

/**
 * Authentication and the key cache in-process (docs/api/conventions.md §Authentication and API keys,
 * §Scopes per route): two gateway copies as two Fastify apps, each with its own key cache, on a real
 * database of keys and a real Redis that carries revocations from one copy to the other.
 */
const names = naming(`${process.env.FUNIL_TEST_ENV}_gwauth`);
const CHANNEL = `funil:${process.env.FUNIL_TEST_ENV}:gwauth:${Date.now()}:keys`;
let sql: Sql;
let store: KeyStore;
let redis: Redis;
const copies: Array<{ app: FastifyInstance; keys: KeyResolver }> = [];

async function gatewayCopy(ttlMs = 30_000) {
  const keys = keyResolver({ store, ttlMs, redis, channel: CHANNEL });
  await keys.ready;
  const app = Fastify({ logger: false });
  await app.register(errorsPlugin);
  await app.register(authPlugin, { keys });
  app.get("/contacts", { config: { scopes: ["contacts.read"] } }, async (req) => ({
    workspaceId: req.caller.workspaceId,
  }));
  app.post("/notes", { config: { scopes: ["contacts.write", "opportunities.write"] } }, async () => ({}));
  app.get("/platform/users", { config: { platform: true } }, async () => ({ data: [] }));
  await app.listen({ port: 0, host: "127.0.0.1" });
  copies.push({ app, keys });
  return { app, keys };
}

beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    names.database("gateway"),
  );
  await migrate(sql, fileURLToPath(new URL("../../migrations", import.meta.url)));
  store = keyStoreOf(sql, names);
  redis = openRedis(
    process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    pino({ level: "silent" }),
    "the key cache runs locally",
  );
});
afterAll(async () => {
  for (const { app, keys } of copies) {
    await app.close();
    await keys.close();
  }
  redis?.disconnect();
  await sql?.end({ timeout: 5 });
});

/** A workspace and a key with these scopes; the plain key is what a client sends. */
async function newKey(scopes: string[], operator = false) {
  const ws = await store.createWorkspace("Acme", operator, clock.now(), SYSTEM);
  const secret = generateKey();
  const key = await store.createKey(
    ws.id,
    { name: "test", prefix: secret.slice(0, 8), hash: hashKey(secret), scopes },
    clock.now(),
    SYSTEM,
  );
  return { secret, keyId: key.id, workspaceId: ws.id };
}
const call = (app: FastifyInstance, url: string, authorization?: string, method: "GET" | "POST" = "GET") =>
  app.inject({ method, url, headers: authorization === undefined ? {} : { authorization } });
const bearer = (secret: string) => `Bearer ${secret}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("docs/api/conventions.md §Authentication and API keys", () => {
  let copy: Awaited<ReturnType<typeof gatewayCopy>>;
  beforeAll(async () => {
    copy = await gatewayCopy();
  });

  it("the workspace comes from the key", async () => {
    const { secret, workspaceId } = await newKey(["contacts.read"]);
    const res = await call(copy.app, "/contacts", bearer(secret));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ workspaceId });
  });

  it.each([
    ["no Authorization header", undefined],
    ["another scheme", "Basic Zm9vOmJhcg=="],
    ["a malformed key", "Bearer fnl_short"],
    ["an unknown key", `Bearer ${generateKey()}`],
  ])("%s is a 401 unauthorized with WWW-Authenticate", async (_name, authorization) => {
    const res = await call(copy.app, "/contacts", authorization);
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe("unauthorized");
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="funil"');
  });

  it("two Authorization headers are a 401, even with the same valid key twice: never chosen between", async () => {
    const { secret } = await newKey(["contacts.read"]);
    const { port } = copy.app.server.address() as { port: number };
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1");
      let got = "";
      socket.on("data", (d) => {
        got += d.toString();
        if (got.includes("}}")) socket.end();
      });
      socket.on("close", () => resolve(got));
      socket.on("error", reject);
      socket.write(
        `GET /contacts HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${secret}\r\nauthorization: Bearer ${secret}\r\nconnection: close\r\n\r\n`,
      );
    });
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).toContain("credentials sent twice");
  });

  it("a key without the route's scope is a 403 missing_scope naming it; either of two scopes is enough", async () => {
    const { secret } = await newKey(["opportunities.write"]);
    const res = await call(copy.app, "/contacts", bearer(secret));
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toMatchObject({
      code: "missing_scope",
      details: [{ path: "scope", message: "contacts.read" }],
    });
    expect((await call(copy.app, "/notes", bearer(secret), "POST")).statusCode).toBe(200);
  });

  it("learner routes need platform.read AND an operator workspace, else 403 forbidden_platform", async () => {
    const operator = await newKey(["platform.read"], true);
    const notOperator = await newKey(["platform.read"], false);
    const noScope = await newKey(["contacts.read"], true);
    expect((await call(copy.app, "/platform/users", bearer(operator.secret))).statusCode).toBe(200);
    for (const k of [notOperator, noScope]) {
      const res = await call(copy.app, "/platform/users", bearer(k.secret));
      expect([res.statusCode, res.json().error.code]).toEqual([403, "forbidden_platform"]);
    }
  });

  it("a route that declares no scope cannot be registered", async () => {
    const app = Fastify({ logger: false });
    await app.register(authPlugin, { keys: copy.keys });
    expect(() => app.get("/open", async () => ({}))).toThrow(/route GET \/open declares no scope/);
    await app.close();
  });
});

describe("the key cache across gateway copies (docs/api/conventions.md §Authentication and API keys)", () => {
  it("a cached key is not read again; a revocation through one copy reaches the other at once", async () => {
    const [a, b] = [await gatewayCopy(), await gatewayCopy()];
    const { secret, keyId } = await newKey(["contacts.read"]);
    expect((await call(a.app, "/contacts", bearer(secret))).statusCode).toBe(200);
    expect((await call(b.app, "/contacts", bearer(secret))).statusCode).toBe(200);
    // Revoked in the database only: both copies still answer from their caches (30 s).
    await store.revoke(keyId, clock.now(), SYSTEM);
    expect((await call(b.app, "/contacts", bearer(secret))).statusCode).toBe(200);
    // Announced by copy a, as the admin API does: copy b drops it too.
    await a.keys.invalidate(keyId);
    let status = 200;
    for (let i = 0; i < 50 && status === 200; i++) {
      await sleep(10);
      status = (await call(b.app, "/contacts", bearer(secret))).statusCode;
    }
    expect(status).toBe(401);
    expect((await call(a.app, "/contacts", bearer(secret))).statusCode).toBe(401);
  });

  it("a scope change announced for the key is seen on the next request", async () => {
    const [a, b] = [await gatewayCopy(), await gatewayCopy()];
    const { secret, keyId } = await newKey(["contacts.read"]);
    expect((await call(b.app, "/contacts", bearer(secret))).statusCode).toBe(200);
    await store.setScopes(keyId, ["opportunities.read"], clock.now(), SYSTEM);
    await a.keys.invalidate(keyId);
    let status = 200;
    for (let i = 0; i < 50 && status === 200; i++) {
      await sleep(10);
      status = (await call(b.app, "/contacts", bearer(secret))).statusCode;
    }
    expect(status).toBe(403);
  });

  it("a key is cached at most its lifetime: a revocation nobody announced is seen once it runs out", async () => {
    const { app } = await gatewayCopy(200);
    const { secret, keyId } = await newKey(["contacts.read"]);
    expect((await call(app, "/contacts", bearer(secret))).statusCode).toBe(200);
    await store.revoke(keyId, clock.now(), SYSTEM);
    expect((await call(app, "/contacts", bearer(secret))).statusCode).toBe(200);
    await sleep(250);
    expect((await call(app, "/contacts", bearer(secret))).statusCode).toBe(401);
  });
});
