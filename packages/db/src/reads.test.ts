import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Sql } from "./client.js";
import { coalescedByKey, coalescedReads, keyRows } from "./reads.js";

// One connection, so that pg_prepared_statements (a view of the session) sees every statement run.
let sql: Sql;
beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    `funil_${process.env.FUNIL_TEST_ENV}_deals_db`,
    { max: 1 },
  );
  await sql`create table if not exists read_things (workspace_id text not null, id text primary key, note text)`;
  await sql`truncate read_things`;
  await sql`insert into read_things ${sql(
    Array.from({ length: 40 }, (_, i) => ({ workspaceId: `ws_${i % 2}`, id: `th_${i}`, note: `n${i}` })),
  )}`;
});
afterAll(async () => {
  await sql.end({ timeout: 5 });
});

interface Thing {
  workspaceId: string;
  id: string;
  note: string;
}

const reader = () =>
  coalescedReads<Thing>(sql, {
    async one(workspaceId, id) {
      const [row] = await sql<Thing[]>`
        select workspace_id, id, note from read_things where workspace_id = ${workspaceId} and id = ${id}`;
      return row;
    },
    many: (keys) => sql<Thing[]>`
      select workspace_id, id, note from read_things where (workspace_id, id) in ${keys}`,
  });

describe("coalescedReads", () => {
  it("reads started together share one statement; each gets its own row, undefined when missing or of another workspace", async () => {
    const read = reader();
    const got = await Promise.all([
      read("ws_0", "th_0"),
      read("ws_1", "th_1"),
      read("ws_1", "th_2"), // th_2 is ws_0's: never an answer to ws_1
      read("ws_0", "th_404"),
      read("ws_0", "th_4"),
    ]);
    expect(got.map((t) => t?.note)).toEqual(["n0", "n1", undefined, undefined, "n4"]);
    expect(await read("ws_1", "th_3")).toEqual({ workspaceId: "ws_1", id: "th_3", note: "n3" });
  });

  it("a batch's statement is planned once and its plan kept (generic), whatever the keys: not planned afresh per batch", async () => {
    const read = reader();
    for (let batch = 0; batch < 12; batch++)
      await Promise.all([0, 1, 2].map((j) => read(`ws_${(batch + j) % 2}`, `th_${batch + j}`)));
    const statements = await sql<{ statement: string; genericPlans: number; customPlans: number }[]>`
      select statement, generic_plans::int, custom_plans::int from pg_prepared_statements
      where statement like '%from read_things where (workspace_id, id) in (values%' and statement like '%$8)%'
        and statement not like '%$9%'`;
    // 3 keys are padded to 4 (parameters $1 to $8): one statement for every batch.
    expect(statements).toHaveLength(1);
    expect(statements[0]!.customPlans).toBeLessThanOrEqual(5);
    expect(statements[0]!.genericPlans).toBeGreaterThanOrEqual(7);
  });

  it("keyRows pads to a power of two with the last key, so few statements serve every batch size", async () => {
    const keys = Array.from({ length: 5 }, (_, i) => ({ workspaceId: "ws_0", id: `th_${2 * i}` }));
    const rows = await sql<{ w: string; i: string }[]>`select * from ${keyRows(sql, keys)} as k(w, i)`;
    expect(rows.map((r) => r.i)).toEqual(["th_0", "th_2", "th_4", "th_6", "th_8", "th_8", "th_8", "th_8"]);
    expect((await sql`select * from ${keyRows(sql, keys.slice(0, 1))} as k(w, i)`).length).toBe(1);
  });
});

describe("coalescedByKey", () => {
  /** A workspace's notes in id order, counting the statements run. */
  const lister = () => {
    const runs: string[] = [];
    const list = coalescedByKey(async (workspaceId: string) => {
      runs.push(workspaceId);
      if (workspaceId === "ws_broken") throw new Error("no such table");
      const rows = await sql<{ note: string }[]>`
        select note, pg_sleep(0.05) from read_things where workspace_id = ${workspaceId} order by id`;
      return rows.map((r) => r.note);
    });
    return { list, runs };
  };

  it("the lists of one key asked together run one statement and get the same answer; other keys their own, a failure only its own", async () => {
    const { list, runs } = lister();
    const got = await Promise.allSettled([
      list("ws_0"),
      list("ws_1"),
      list("ws_0"),
      list("ws_broken"),
      list("ws_0"),
    ]);
    expect(runs.sort()).toEqual(["ws_0", "ws_1", "ws_broken"]);
    const values = got.map((r) => (r.status === "fulfilled" ? r.value.length : r.reason.message));
    expect(values).toEqual([20, 20, 20, "no such table", 20]);
  });

  it("a list asked after another's statement started does not share it: it sees what was written in between", async () => {
    const { list, runs } = lister();
    const first = list("ws_0");
    await new Promise((resolve) => setTimeout(resolve, 10)); // the first statement is on its way
    await sql`insert into read_things values ('ws_0', 'th_zz', 'late')`;
    const second = list("ws_0");
    try {
      expect((await second).at(-1)).toBe("late");
      expect((await first).at(-1)).not.toBe("late");
      expect(runs).toEqual(["ws_0", "ws_0"]);
    } finally {
      await sql`delete from read_things where id = 'th_zz'`;
    }
  });
});
