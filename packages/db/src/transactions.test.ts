import type { Redis } from "ioredis";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sql } from "./client.js";
import { openRedis } from "./redis.js";
import {
  CallInTransactionError,
  checkingTransactions,
  markingTransactions,
  outsideTransaction,
} from "./transactions.js";

const server = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const silent = { warn: () => {}, info: () => {} };
let raw: Sql;
let redis: Redis;

beforeAll(() => {
  raw = postgres(server, {
    max: 2,
    onnotice: () => {},
    connection: { application_name: "unit_transactions" },
  });
  redis = openRedis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", silent, "nothing");
});
afterAll(async () => {
  redis?.disconnect();
  await raw?.end();
});

const call = async () => {
  outsideTransaction("RPC funil.x.v1.XService/Y");
  return "sent";
};
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: unknown) => err,
  );

describe("no call leaves the process while a transaction is open (docs/architecture.md §Rules that keep it real)", () => {
  it("marked: a call from a transaction's callback (awaited, in a savepoint, or only started there) throws naming it", async () => {
    const sql = markingTransactions(raw, true);
    expect(await call()).toBe("sent");
    const inside = await refusal(
      sql.begin(async (tx) => {
        await tx`select 1`;
        return call();
      }),
    );
    expect(inside).toBeInstanceOf(CallInTransactionError);
    expect((inside as Error).message).toBe(
      "RPC funil.x.v1.XService/Y while a PostgreSQL transaction is open: make it before or after the transaction",
    );
    expect(await refusal(sql.begin((tx) => tx.savepoint(() => call())))).toBeInstanceOf(
      CallInTransactionError,
    );
    let started: unknown;
    await sql.begin(async () => {
      setTimeout(() => call().catch((err) => (started = err)), 0);
      await new Promise((r) => setTimeout(r, 20));
    });
    expect(started).toBeInstanceOf(CallInTransactionError);
    // After the transaction, the caller's own context is not marked.
    expect(await call()).toBe("sent");
  });

  it("unmarked (FUNIL_CHECK_TRANSACTIONS not true): the pool is itself and nothing is refused", async () => {
    expect(checkingTransactions({})).toBe(false);
    expect(checkingTransactions({ FUNIL_CHECK_TRANSACTIONS: " TRUE " })).toBe(true);
    expect(markingTransactions(raw, false)).toBe(raw);
    await expect(raw.begin(() => call())).resolves.toBe("sent");
  });

  it("openRedis: a command inside a marked transaction is refused, naming it; outside it runs", async () => {
    const sql = markingTransactions(raw, true);
    const key = `funil:${process.env.FUNIL_TEST_ENV}:unit:transactions`;
    const refused = await refusal(sql.begin(() => redis.set(key, "1", "PX", 1000)));
    expect(refused).toBeInstanceOf(CallInTransactionError);
    expect((refused as Error).message).toMatch(/^Redis SET while a PostgreSQL transaction is open/);
    expect(await redis.get(key)).toBeNull();
    expect(await redis.set(key, "1", "PX", 1000)).toBe("OK");
  });
});
