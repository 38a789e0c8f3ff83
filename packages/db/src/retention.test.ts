import { naming } from "@funil/config";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Sql } from "./client.js";
import { migrate } from "./migrate.js";
import { inBatches, inboxSweep, startSweeps } from "./retention.js";

const names = naming(`${process.env.FUNIL_TEST_ENV}_unit_retention`);
const server = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
let sql: Sql;

beforeAll(async () => {
  sql = await openDatabase(server, names.database("db"));
  await migrate(sql);
});
afterAll(async () => {
  await sql?.end();
});

const HOUR = 3_600_000;

describe("retention (docs/operations.md §Retention)", () => {
  it("the inbox sweep deletes the rows older than the inbox retention, in batches, and keeps the rest", async () => {
    await sql`delete from inbox`;
    const now = new Date("2026-11-25T12:00:00Z");
    // 12 000 rows of 48 h ago (more than two batches), 10 of an hour ago.
    await sql`
      insert into inbox (consumer, message_id, processed_at)
      select 'c', 'old-' || i, ${new Date(now.getTime() - 48 * HOUR)} from generate_series(1, 12000) i`;
    await sql`
      insert into inbox (consumer, message_id, processed_at)
      select 'c', 'new-' || i, ${new Date(now.getTime() - HOUR)} from generate_series(1, 10) i`;
    const deleted = await inboxSweep(24 * HOUR).run(sql, now);
    expect(deleted).toBe(12_000);
    const left = await sql<{ messageId: string }[]>`select message_id from inbox order by message_id`;
    expect(left.map((r) => r.messageId)).toEqual(Array.from({ length: 10 }, (_, i) => `new-${i + 1}`).sort());
  });

  it("a batched sweep goes on until a batch comes back short", async () => {
    const batches = [5000, 5000, 3];
    const asked: number[] = [];
    const total = await inBatches(async (limit) => {
      asked.push(limit);
      return batches.shift() ?? 0;
    });
    expect(total).toBe(10_003);
    expect(asked).toEqual([5000, 5000, 5000]);
  });

  it("a failing sweep is reported and does not stop the others", async () => {
    const errors: string[] = [];
    const swept: Array<[string, number]> = [];
    const sweeps = startSweeps({
      sql,
      now: () => new Date(),
      intervalMs: 60_000,
      sweeps: [
        {
          name: "broken",
          run: async (s) => {
            await s`select * from no_such_table`;
            return 0;
          },
        },
        { name: "fine", run: async () => 3 },
      ],
      onSwept: (name, rows) => swept.push([name, rows]),
      onError: (name) => errors.push(name),
    });
    await sweeps.stop();
    expect(errors).toEqual(["broken"]);
    expect(swept).toEqual([["fine", 3]]);
  });
});
