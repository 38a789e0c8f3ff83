import { baseEnv, loadConfig } from "@funil/config";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { SERVICES } from "../../scripts/stack.mjs";
import { newWorkspace, type Workspace } from "../helpers.js";

/**
 * PostgreSQL connections are a budget (docs/operations.md §Connections): what every process of a stack may hold at
 * once, from its pool size, must leave room for a developer's `npm start` and a test run side by side on
 * a server with PostgreSQL's default max_connections.
 */
const MAX_CONNECTIONS = 100;
/** superuser_reserved_connections: never available to the services. */
const RESERVED = 3;
/** What a default `npm start` stack may hold at most (docs/operations.md §Connections). */
const DEFAULT_STACK_BUDGET = 24;
/**
 * What the test files themselves hold beside the stacks: a probe, and the pools of the tests that open a
 * service's database directly (3 by default, fewer where they say).
 */
const TEST_CLIENTS = 10;
/** Left free when both run: psql sessions, a migration by hand. */
const HEADROOM = 5;

/**
 * A stack's connections at most: each process's request pool and its outbox relay's session (which also
 * LISTENs while it holds the relay lock), the gateway's included. A database is created at start through
 * one more connection, closed before the pool opens.
 */
function stackConnections(poolMax: number): number {
  return ((SERVICES as string[]).length + 1) * (poolMax + 1);
}

/** The largest stack a test file starts beside the run's: the scale test's 3 crm, 2 of every other service, 2 gateways. */
function scaleStack(poolMax: number): number {
  return (3 + 2 * ((SERVICES as string[]).length - 1) + 2) * (poolMax + 1);
}

describe("connections are a budget", () => {
  it("a default `npm start` stack (the configuration's pool sizes) needs at most its documented budget", () => {
    const defaults = loadConfig(baseEnv, {});
    expect(defaults.DATABASE_IDLE_TIMEOUT_S).toBe(30);
    expect(stackConnections(defaults.DATABASE_POOL_MAX)).toBeLessThanOrEqual(DEFAULT_STACK_BUDGET);
  });

  it("`npm start` under load beside a test run at its peak (its own stack plus the scale test's) fits max_connections 100", () => {
    const testPool = Number(process.env.DATABASE_POOL_MAX);
    const testRun = stackConnections(testPool) + scaleStack(testPool) + TEST_CLIENTS;
    expect(DEFAULT_STACK_BUDGET + testRun + HEADROOM).toBeLessThanOrEqual(MAX_CONNECTIONS - RESERVED);
  });
});

describe("the run's stack holds what its pools allow, and says who holds what", () => {
  let server: postgres.Sql;
  let ws: Workspace;
  const prefix = `funil_${inject("funilEnv")}_`;
  beforeAll(async () => {
    server = postgres(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres", {
      max: 1,
      onnotice: () => {},
    });
    ws = await newWorkspace();
  });
  afterAll(async () => {
    await server?.end();
  });

  const stackBackends = () =>
    server<{ datname: string; applicationName: string }[]>`
      select datname, application_name as "applicationName" from pg_stat_activity
      where datname in ${server((SERVICES as string[]).concat("gateway").map((s) => prefix + s))}`;

  it("under a burst of requests on every service, the stack never holds more than stackConnections(DATABASE_POOL_MAX)", async () => {
    const budget = stackConnections(Number(process.env.DATABASE_POOL_MAX));
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, (await stackBackends()).length);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const paths = [
      "/contacts?limit=5",
      "/opportunities?limit=5",
      "/appointments?limit=5",
      "/webhooks",
      "/tasks",
    ];
    const statuses = new Set<number>();
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => ws.call("GET", paths[i % paths.length]!)).concat(
          Array.from({ length: 10 }, (_, i) =>
            ws.call("POST", "/contacts", { name: "Burst", email: `burst-${round}-${i}@connections.test` }),
          ),
        ),
      );
      for (const a of answers) statuses.add(a.status);
    }
    sampling = false;
    await sampler;
    // Above what the relays hold alone: the request pools were in use.
    expect(peak).toBeGreaterThan(SERVICES.length);
    expect(peak).toBeLessThanOrEqual(budget);
    expect([...statuses].sort()).toEqual([200, 201]);
  });

  it("each connection's application_name names its database, and the relay's its role", async () => {
    const seen = await stackBackends();
    for (const b of seen) expect([b.datname, `${b.datname}:relay`]).toContain(b.applicationName);
    // Each process's relay, the gateway's too: one session, which polls and LISTENs, whatever the traffic.
    for (const service of (SERVICES as string[]).concat("gateway"))
      expect(seen.filter((b) => b.applicationName === `${prefix}${service}:relay`)).toHaveLength(1);
  });
});
