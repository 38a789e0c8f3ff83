import { copyFile, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { naming } from "@funil/config";
import { migrate, openDatabase, type Sql } from "@funil/db";
import { afterAll, beforeAll, expect, it } from "vitest";

const MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));
const names = naming(`${process.env.FUNIL_TEST_ENV}_unit_crm_keys`);
const server = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
let sql: Sql;
let dir: string;

/** The migrations up to (and without) `before`, in a directory of their own. */
async function migrationsBefore(before: string) {
  for (const f of await readdir(MIGRATIONS))
    if (f < before) await copyFile(join(MIGRATIONS, f), join(dir, f));
}

beforeAll(async () => {
  const admin = await openDatabase(server, "postgres", { max: 1 });
  await admin.unsafe(`drop database if exists "${names.database("crm")}" with (force)`);
  await admin.end();
  sql = await openDatabase(server, names.database("crm"), { max: 1 });
  dir = await mkdtemp(join(tmpdir(), "crm-migrations-"));
});
afterAll(async () => {
  await sql?.end();
  await rm(dir, { recursive: true, force: true });
});

it("docs/api/conventions.md §Text is kept as sent: keys stored camel-cased by the old row mapping are renamed back to their fieldKeys", async () => {
  await migrationsBefore("00004");
  await migrate(sql, dir);
  const now = new Date();
  const defs = [
    ["contact", "plan_type"],
    ["contact", "Plan_Type_2"],
    ["contact", "seat_count"],
    ["contact", "seatCount"], // a definition of its own: its key is never renamed
    ["opportunity", "deal_size"],
  ];
  for (const [i, [entity, key]] of defs.entries())
    await sql`insert into custom_field_defs (id, workspace_id, entity, field_key, label, type, created_at)
      values (${`cf${i}`}, 'ws1', ${entity!}, ${key!}, ${key!}, 'text', ${now})`;
  const contact = (id: string, fields: object) =>
    sql`insert into contacts (id, workspace_id, status, custom_fields, utm, tags, created_at, updated_at, search)
      values (${id}, 'ws1', 'active', ${sql.json(fields as never)}, '{}', '{}', ${now}, ${now}, '')`;
  await contact("c1", { planType: "gold", PlanType2: "x", other: 1 });
  await contact("c2", { planType: "old", plan_type: "new" });
  await contact("c3", { seatCount: 3 });
  await sql`insert into pipelines (id, workspace_id, name, created_at) values ('p1', 'ws1', 'P', ${now})`;
  await sql`insert into stages (id, workspace_id, pipeline_id, name, position) values ('s1', 'ws1', 'p1', 'S', 0)`;
  await sql`insert into opportunities (id, workspace_id, contact_id, pipeline_id, stage_id, title, currency,
      custom_fields, stage_changed_at, created_at, updated_at)
    values ('o1', 'ws1', 'c1', 'p1', 's1', 'T', 'BRL', ${sql.json({ dealSize: 9 } as never)}, ${now}, ${now}, ${now})`;

  await copyFile(join(MIGRATIONS, "00004_custom_field_keys.sql"), join(dir, "00004_custom_field_keys.sql"));
  expect(await migrate(sql, dir)).toEqual(["00004_custom_field_keys.sql"]);
  const fields = async (table: string, id: string) =>
    (await sql.unsafe(`select custom_fields::text as f from ${table} where id = $1`, [id]))[0]!.f;
  expect(JSON.parse(await fields("contacts", "c1"))).toEqual({
    plan_type: "gold",
    Plan_Type_2: "x",
    other: 1,
  });
  // When the fieldKey is there too, it was written later and wins; the leftover stays (no value is lost).
  expect(JSON.parse(await fields("contacts", "c2"))).toEqual({ planType: "old", plan_type: "new" });
  expect(JSON.parse(await fields("contacts", "c3"))).toEqual({ seatCount: 3 });
  expect(JSON.parse(await fields("opportunities", "o1"))).toEqual({ deal_size: 9 });
});
