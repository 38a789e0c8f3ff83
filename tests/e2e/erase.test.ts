import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ingestClient, newWorkspace, type Workspace, waitFor } from "../helpers.js";
import { type Receiver, startReceiver } from "../receiver.js";
import { deal, member, pipeline } from "./crm-fixtures.js";
import { ahead, book, calendar } from "./scheduling-fixtures.js";

/*
 * docs/api/contacts.md §POST /contacts/{id}/erase end to end: one contact's personal data put in every service (crm's
 * contact, notes, task, deal; a meeting; interactions ingested with its phone and e-mail; webhook
 * deliveries, one still pending), erased through the gateway, then every text and JSON column of every
 * service's database searched for its name, phone and e-mail.
 */

const SERVICES = ["crm", "timeline", "scheduling", "webhooks", "learning", "gateway"] as const;
const databases = new Map<string, postgres.Sql>();
function database(service: string) {
  let sql = databases.get(service);
  if (!sql) {
    const url = new URL(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
    url.pathname = `/funil_${inject("funilEnv")}_${service}`;
    sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
    databases.set(service, sql);
  }
  return sql;
}

/** Every `table.column` of every service's database whose text holds one of `needles` (case-insensitive). */
async function findAnywhere(needles: string[]): Promise<string[]> {
  const patterns = needles.map((n) => `%${n.toLowerCase()}%`);
  const found: string[] = [];
  for (const service of SERVICES) {
    const sql = database(service);
    const columns = await sql<{ table: string; column: string }[]>`
      select c.table_name as table, c.column_name as column from information_schema.columns c
      join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
      where c.table_schema = 'public' and t.table_type = 'BASE TABLE'
        and c.data_type in ('text', 'character varying', 'jsonb', 'json', 'ARRAY')`;
    for (const { table, column } of columns) {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from ${sql(table)} where lower(${sql(column)}::text) like any(${patterns})`;
      if (row!.n > 0) found.push(`${service}.${table}.${column}`);
    }
  }
  return found;
}

const run = Date.now().toString(36);
const digits = String(Date.now()).slice(-8);
const person = {
  name: `Zélia Apagável ${run}`,
  phone: `+55 11 9${digits.slice(0, 4)}-${digits.slice(4)}`,
  email: `zelia.${run}@example.com`,
};
/** What must not be found anywhere: the name's unusual part, the phone as sent and as digits, the e-mail. */
const needles = [`Apagável ${run}`, person.phone, `119${digits}`, person.email];

let ws: Workspace;
let rx: Receiver;
let ingest: Awaited<ReturnType<typeof ingestClient>>;
beforeAll(async () => {
  [ws, rx, ingest] = await Promise.all([newWorkspace(), startReceiver(), ingestClient()]);
});
afterAll(async () => {
  await Promise.all([rx.close(), ingest.close(), ...[...databases.values()].map((sql) => sql.end())]);
});

/** A message, an e-mail and a call about the contact, each carrying its name, phone or e-mail, as the sources publish them. */
async function ingestAbout(contactId: string, userId: string) {
  const base = { workspaceId: ws.id, contactId };
  await ingest.publish("ingest.inbox.message", {
    ...base,
    rowId: `m-${run}`,
    channel: "whatsapp",
    direction: "inbound",
    conversationId: `cv-${run}`,
    channelInstanceId: "inst-1",
    senderPhone: person.phone,
    sentAt: "2026-01-10T10:00:00.000Z",
    preview: `Oi, aqui é ${person.name}`,
  });
  await ingest.publish("ingest.email", {
    ...base,
    rowId: `e-${run}`,
    direction: "inbound",
    kind: "contact_reply",
    sentAt: "2026-01-10T11:00:00.000Z",
    preview: `From ${person.email}: ok`,
  });
  await ingest.publish("ingest.call", {
    ...base,
    rowId: `c-${run}`,
    direction: "outbound",
    userId,
    startedAt: "2026-01-10T12:00:00.000Z",
    durationSec: 60,
    status: "answered",
    preview: `Dialled ${person.phone}`,
  });
}

/** The contact and its data in every service, each write checked; returns the ids the test reads back. */
async function fill() {
  const delivered = rx.url(`/erase-ok-${run}`);
  const events = ["contact.created", "contact.updated", "opportunity.created", "meeting.booked"];
  expect((await ws.call("POST", "/webhooks", { url: delivered, events })).status).toBe(201);
  const [author, pl, cal] = await Promise.all([member(ws), pipeline(ws), calendar(ws)]);
  const created = await ws.call(
    "POST",
    "/contacts",
    {
      ...person,
      company: "Apagável Ltda",
      cpf: "123.456.789-09",
      notes: `Prefers ${person.email}`,
      tags: ["lead"],
    },
    { "idempotency-key": `upsert-${run}` },
  );
  expect(created.status).toBe(201);
  const contactId = created.body.id as string;
  expect((await ws.call("PATCH", `/contacts/${contactId}`, { role: "CEO" })).status).toBe(200);
  const d = await deal(ws, { contactId, pipelineId: pl.id, valueCents: 77_700 });
  const note = await ws.call("POST", "/notes", {
    contactId,
    userId: author.id,
    body: `Called ${person.name} on ${person.phone}`,
  });
  expect(note.status).toBe(201);
  const task = await ws.call("POST", "/tasks", {
    title: "Call back",
    body: `ring ${person.phone}`,
    contactId,
  });
  expect(task.status).toBe(201);
  const meeting = await book(
    ws,
    {
      calendarId: cal.id,
      contactId,
      assigneeUserId: cal.assigneeUserIds[0],
      startAt: ahead(2, "10:00"),
      title: `Demo for ${person.name}`,
      location: `${person.name}'s office`,
    },
    { "idempotency-key": `book-${run}` },
  );
  expect(meeting.status, JSON.stringify(meeting.body)).toBe(201);
  await ingestAbout(contactId, author.id);
  // Everything has landed: the four interactions (the note among them) and the delivered webhooks.
  await waitFor(async () => {
    const list = await ws.call("GET", `/interactions?contactId=${contactId}`);
    return list.body.data?.length === 4 || undefined;
  }, 15_000);
  const path = new URL(delivered).pathname;
  await waitFor(async () => {
    const types = new Set(rx.at(path).map((r) => r.body?.type));
    return events.every((t) => types.has(t)) || undefined;
  }, 15_000);
  return { contactId, deal: d, pipelineId: pl.id, meetingId: meeting.body.id as string };
}

/**
 * A delivery of the contact still pending when the erasure comes: a subscription whose receiver hangs
 * (each attempt times out) gets a contact.updated made just before.
 */
async function pendingDelivery(contactId: string) {
  const held = rx.url(`/erase-held-${run}`, "hang");
  expect((await ws.call("POST", "/webhooks", { url: held, events: ["contact.updated"] })).status).toBe(201);
  expect((await ws.call("PATCH", `/contacts/${contactId}`, { role: "CFO" })).status).toBe(200);
  return new URL(held).pathname;
}

describe("POST /contacts/{id}/erase (docs/api/contacts.md §POST /contacts/{id}/erase)", () => {
  it("docs/api/contacts.md §POST /contacts/{id}/erase: nothing of the person is left in any service's database; the deal still counts; phone and e-mail are free", async () => {
    const filled = await fill();
    const { contactId } = filled;
    // The search sees the person in every service that holds it before the erasure.
    const before = await findAnywhere(needles);
    for (const table of [
      "crm.contacts",
      "crm.notes",
      "crm.tasks",
      "crm.idempotency_keys",
      "timeline.interactions",
      "scheduling.appointments",
      "scheduling.idempotency_keys",
      "webhooks.deliveries",
    ])
      expect(
        before.some((f) => f.startsWith(`${table}.`)),
        `${table} in ${before}`,
      ).toBe(true);

    // Another workspace's key: the contact is unknown there, and nothing is erased.
    const other = await newWorkspace();
    expect((await other.call("POST", `/contacts/${contactId}/erase`)).status).toBe(404);
    expect((await ws.call("GET", `/contacts/${contactId}`)).status).toBe(200);

    const heldPath = await pendingDelivery(contactId);
    const erased = await ws.call("POST", `/contacts/${contactId}/erase`, undefined, {
      "idempotency-key": `erase-${run}`,
    });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(erased.body).toEqual({
      id: contactId,
      erasedAt: expect.any(String),
      crm: { notesDeleted: 1, tasksCleared: 1, opportunitiesKept: 1 },
      asynchronous: ["timeline", "scheduling", "webhooks"],
    });
    const replay = await ws.call("POST", `/contacts/${contactId}/erase`, undefined, {
      "idempotency-key": `erase-${run}`,
    });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(erased.body);
    expect((await ws.call("POST", `/contacts/${contactId}/erase`)).status).toBe(404);
    expect((await ws.call("GET", `/contacts/${contactId}`)).status).toBe(404);

    // The pending delivery goes out once the webhooks service has redacted it, without the person's data.
    await waitFor(async () => {
      const rows = await database("webhooks")`select 1 from erased_contacts where contact_id = ${contactId}`;
      return rows.length === 1 || undefined;
    }, 10_000);
    // An attempt sends its delivery as read at most RECHECK_MS (0.1 s) before its POST: past that, every
    // attempt is redacted.
    await new Promise((r) => setTimeout(r, 250));
    rx.set(heldPath, "ok");
    const sent = await waitFor(
      async () => rx.at(heldPath).find((r) => r.status === 200 && r.body?.type === "contact.updated"),
      20_000,
    );
    expect(sent.body.data).toMatchObject({ id: contactId, name: null, phone: null, email: null });
    for (const needle of needles) expect(sent.raw.toLowerCase()).not.toContain(needle.toLowerCase());

    // The other services erase once contact.erased reaches them: then nothing is found anywhere.
    const after = await waitFor(async () => {
      const found = await findAnywhere(needles);
      return found.length === 0 ? found : undefined;
    }, 20_000).catch(async () => findAnywhere(needles));
    expect(after).toEqual([]);

    // The deal stays, counted in the funnel and listed by its contact's id.
    const funnel = await ws.call("GET", `/funnel?pipelineId=${filled.pipelineId}`);
    expect(funnel.body.total).toEqual({ count: 1, valueCents: 77_700 });
    const deals = await ws.call("GET", `/opportunities?contactId=${contactId}`);
    expect(deals.body.data.map((d: { id: string }) => d.id)).toEqual([filled.deal.id]);
    expect((await ws.call("GET", `/opportunities/${filled.deal.id}`)).status).toBe(200);
    // The interactions and the meeting stay, without what was personal.
    const interactions = await ws.call("GET", `/interactions?contactId=${contactId}`);
    expect(interactions.body.data.map((i: { preview: string | null }) => i.preview)).toEqual([
      null,
      null,
      null,
      null,
    ]);
    const meeting = await ws.call("GET", `/appointments/${filled.meetingId}`);
    expect(meeting.body).toMatchObject({ contactId, contactName: null, title: null, location: null });
    // A remembered answer that carried the person replays 404, without it.
    const upsertAgain = await ws.call(
      "POST",
      "/contacts",
      { ...person },
      { "idempotency-key": `upsert-${run}` },
    );
    expect(upsertAgain.status).toBe(422);
    const replayedUpsert = await ws.call(
      "POST",
      "/contacts",
      {
        ...person,
        company: "Apagável Ltda",
        cpf: "123.456.789-09",
        notes: `Prefers ${person.email}`,
        tags: ["lead"],
      },
      { "idempotency-key": `upsert-${run}` },
    );
    expect(replayedUpsert.status).toBe(404);

    // The phone and e-mail are free: a new contact, with another id.
    const again = await ws.call("POST", "/contacts", { phone: person.phone, email: person.email });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(contactId);
  }, 120_000);
});
