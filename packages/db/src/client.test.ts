import { naming } from "@funil/config";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Sql } from "./client.js";

const names = naming(`${process.env.FUNIL_TEST_ENV}_unit_client`);
const server = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
let probe: Sql;

beforeAll(() => {
  probe = postgres(server, { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await probe?.end();
});

/** The connections PostgreSQL sees from one application_name. */
async function held(applicationName: string): Promise<number> {
  const [row] = await probe<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity where application_name = ${applicationName}`;
  return row!.n;
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("openDatabase: connections are a budget", () => {
  it("a pool opens at most `max` connections, named after its database, however many queries wait", async () => {
    const database = names.database("max");
    const sql = await openDatabase(server, database, { max: 3 });
    try {
      let peak = 0;
      const sampling = (async () => {
        for (let i = 0; i < 15; i++) {
          peak = Math.max(peak, await held(database));
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      await Promise.all(Array.from({ length: 12 }, () => sql`select pg_sleep(0.05)`));
      await sampling;
      expect(peak).toBeGreaterThan(0);
      expect(peak).toBeLessThanOrEqual(3);
      expect(await held(database)).toBe(3);
    } finally {
      await sql.end();
    }
  });

  it("an idle connection is released after idleTimeoutS (DATABASE_IDLE_TIMEOUT_S)", async () => {
    const database = names.database("idle");
    const sql = await openDatabase(server, database, { max: 3, idleTimeoutS: 1 });
    try {
      await Promise.all(Array.from({ length: 3 }, () => sql`select pg_sleep(0.1)`));
      expect(await held(database)).toBe(3);
      await until(async () => (await held(database)) === 0, 5000);
      // The pool opens connections again on demand.
      const [row] = await sql<{ one: number }[]>`select 1 as one`;
      expect(row!.one).toBe(1);
    } finally {
      await sql.end();
    }
  });

  it("customPlans is the database's default, so a session opened by any pooler plans afresh", async () => {
    const database = names.database("plans");
    const sql = await openDatabase(server, database, { customPlans: true, max: 1 });
    const plain = postgres(`${server.replace(/\/[^/]*$/, "")}/${database}`, { max: 1, onnotice: () => {} });
    try {
      const [pooled] = await sql<{ planCacheMode: string }[]>`show plan_cache_mode`;
      const [other] = await plain<{ plan_cache_mode: string }[]>`show plan_cache_mode`;
      expect(pooled!.planCacheMode).toBe("force_custom_plan");
      expect(other!.plan_cache_mode).toBe("force_custom_plan");
    } finally {
      await Promise.all([sql.end(), plain.end()]);
    }
  });

  it("copies starting together all open the database, create it once and set its plans once", async () => {
    const database = names.database("race");
    await probe.unsafe(`drop database if exists "${database}" with (force)`);
    const pools = await Promise.all(
      Array.from({ length: 4 }, () => openDatabase(server, database, { customPlans: true, max: 1 })),
    );
    try {
      const answers = await Promise.all(
        pools.map((sql) => sql<{ planCacheMode: string }[]>`show plan_cache_mode`),
      );
      expect(answers.map(([row]) => row!.planCacheMode)).toEqual(Array(4).fill("force_custom_plan"));
    } finally {
      await Promise.all(pools.map((sql) => sql.end()));
    }
  });
});
