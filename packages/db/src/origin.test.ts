import { naming } from "@funil/config";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Sql } from "./client.js";
import { migrate } from "./migrate.js";
import { ACTOR_HEADER, changedFields, originHeaders, originOf, REQUEST_ID_HEADER, SYSTEM } from "./origin.js";
import { changeEmitter, type EventEnvelope, writeEvent } from "./outbox.js";

const names = naming(`${process.env.FUNIL_TEST_ENV}_unit_origin`);
let sql: Sql;

beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    names.database("db"),
  );
  await migrate(sql);
});
afterAll(async () => {
  await sql?.end();
});

/** The envelope the outbox holds for an event id. */
async function stored(id: string): Promise<EventEnvelope> {
  const [row] = await sql<{ envelope: EventEnvelope }[]>`select envelope from outbox where id = ${id}`;
  return row!.envelope;
}

describe("who made a change (docs/api/events.md §Who made a change)", () => {
  it("docs/api/events.md §Who made a change: the headers a write call carries name the key or admin and the request; a call without them is the system's", () => {
    const byKey = { actor: { type: "key" as const, id: "key_1" }, requestId: "req-1" };
    expect(originOf(new Headers(originHeaders(byKey)))).toEqual(byKey);
    expect(originOf(new Headers({ [ACTOR_HEADER]: "admin", [REQUEST_ID_HEADER]: "r" }))).toEqual({
      actor: { type: "admin" },
      requestId: "r",
    });
    expect(originOf(new Headers())).toEqual(SYSTEM);
    expect(originOf(undefined)).toEqual(SYSTEM);
    // Anything else in the header is no one's word: the system.
    expect(originOf(new Headers({ [ACTOR_HEADER]: "key:" }))).toEqual(SYSTEM);
    expect(originOf(new Headers({ [ACTOR_HEADER]: "root", [REQUEST_ID_HEADER]: "r" }))).toEqual(SYSTEM);
  });

  it("docs/api/events.md §Who made a change: a create names every field that holds a value, an update the ones whose value differs, never id, workspaceId, createdAt, updatedAt", () => {
    const before = {
      id: "ct_1",
      workspaceId: "ws_1",
      name: "Ana",
      tags: ["a"],
      email: null,
      customFields: {},
      utm: { source: "x" },
      createdAt: "t0",
      updatedAt: "t0",
    };
    expect(changedFields(before)).toEqual(["name", "tags", "utm"]);
    const after = { ...before, tags: ["a", "b"], utm: { source: "x" }, email: "a@x.io", updatedAt: "t1" };
    expect(changedFields(after, before)).toEqual(["tags", "email"]);
    expect(changedFields(after, ["trashedAt"])).toEqual(["trashedAt"]);
  });

  it("docs/api/events.md §Stream, subjects, envelope: the envelope carries actor, requestId and changes; an event written without an origin is the system's", async () => {
    const origin = { actor: { type: "key" as const, id: "key_9" }, requestId: "req-9" };
    const emitted: string[] = [];
    const emit = changeEmitter(
      async (tx, event) => {
        emitted.push((await writeEvent(tx, (t) => names.subject(`events.${t}`), event)).id);
      },
      (r: { workspaceId: string; id: string; name: string; at: Date }) => ({ id: r.id, name: r.name }),
      (r) => r.at,
    );
    const row = { workspaceId: "ws_9", id: "ct_9", name: "Bia", at: new Date() };
    await sql.begin(async (tx) => {
      await emit(tx, "contact.updated", { ...row, name: "Bea" }, origin, row);
      await writeEvent(tx, (t) => names.subject(`events.${t}`), {
        type: "contact.created",
        workspaceId: "ws_9",
        occurredAt: new Date(),
        data: { id: "ct_10" },
      });
    });
    expect(await stored(emitted[0]!)).toMatchObject({
      actor: { type: "key", id: "key_9" },
      requestId: "req-9",
      changes: ["name"],
      data: { id: "ct_9", name: "Bea" },
    });
    const [system] = await sql<{ envelope: EventEnvelope }[]>`
      select envelope from outbox where envelope->'data'->>'id' = 'ct_10' order by seq desc limit 1`;
    expect(system!.envelope).toMatchObject({ actor: { type: "system" }, requestId: null, changes: [] });
  });
});
