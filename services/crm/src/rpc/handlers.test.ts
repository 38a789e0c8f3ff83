import { create, type MessageShape, toJson } from "@bufbuild/protobuf";
import { Code, type ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { type Clock, naming } from "@funil/config";
import {
  ListContactsResponseSchema,
  ListOpportunitiesResponseSchema,
  ListTasksResponseSchema,
  SERVICES,
} from "@funil/contracts";
import { migrate, openDatabase, type Sql, SYSTEM, writeEvent } from "@funil/db";
import { describeError, encodedBytesOf, errorInterceptor, REPLAYED_HEADER } from "@funil/rpc";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { crmDeps, migrations } from "../server.js";
import { contactService } from "./contacts.js";
import { opportunityService } from "./opportunities.js";
import { routes } from "./routes.js";
import { taskService } from "./tasks.js";
import { contactWire, dealWire, taskWire } from "./wire.js";

/**
 * crm's handlers in-process (docs/architecture.md §A service, room by room: createRouterTransport on the real test
 * database): every branch of decode → domain → store → encode, without a
 * network in between. End-to-end tests prove the wiring.
 */
const names = naming(`${process.env.FUNIL_TEST_ENV}_handlers`);
let sql: Sql;
let now = new Date("2026-11-23T10:00:00.000Z");
const clock: Clock = { now: () => now };
type Clients = {
  [K in keyof typeof SERVICES.crm]: ReturnType<typeof createClient<(typeof SERVICES.crm)[K]>>;
};
let crm: Clients;
let deps: ReturnType<typeof crmDeps>;

beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    names.database("crm"),
  );
  await migrate(sql, migrations);
  deps = crmDeps({
    sql,
    clock,
    emit: async (tx, event) => {
      await writeEvent(tx, (type) => names.subject(`events.${type}`), event);
    },
  });
  // The same error interceptor as the real server: domain errors become ConnectErrors with their code.
  const transport = createRouterTransport(routes(deps), {
    router: { interceptors: [errorInterceptor(pino({ level: "silent" }))] },
  });
  crm = Object.fromEntries(
    Object.entries(SERVICES.crm).map(([name, service]) => [name, createClient(service, transport)]),
  ) as Clients;
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

let n = 0;
const ws = () => `ws_h${Date.now()}_${++n}`;
const failure = (err: unknown) => ({ grpc: (err as ConnectError).code, ...describeError(err) });
const caught = (p: Promise<unknown>) => p.then(() => undefined, failure);

async function pipeline(workspaceId: string) {
  const res = await crm.pipelines.createPipeline({ workspaceId, name: "Sales", stageNames: ["A", "B"] });
  return res.pipeline!;
}
async function contact(workspaceId: string, phone = "+55 11 90000-0001") {
  return (await crm.contacts.upsertContact({ workspaceId, fields: { phone } })).contact!;
}

describe("contacts handlers (docs/api/contacts.md §Contact)", () => {
  it("upsert: created, then found by phone and filled; needs phone or e-mail", async () => {
    const w = ws();
    const first = await crm.contacts.upsertContact({ workspaceId: w, fields: { phone: "11 5555-0000" } });
    expect(first.created).toBe(true);
    const again = await crm.contacts.upsertContact({
      workspaceId: w,
      fields: { phone: "1155550000", name: "Ana", tags: { values: ["lead"] } },
    });
    expect(again).toMatchObject({
      created: false,
      contact: { id: first.contact!.id, name: "Ana", tags: ["lead"] },
    });
    expect(await caught(crm.contacts.upsertContact({ workspaceId: w, fields: { name: "x" } }))).toMatchObject(
      {
        grpc: Code.InvalidArgument,
        code: "validation_failed",
        details: [{ path: "body.phone", message: "phone or email is required" }],
      },
    );
  });

  it("PATCH: clear through `clear`, an unknown field to clear is named, another contact's phone is contact_conflict", async () => {
    const w = ws();
    const a = await contact(w, "1111");
    await contact(w, "2222");
    const cleared = await crm.contacts.updateContact({
      workspaceId: w,
      id: a.id,
      fields: { company: "Acme", clear: ["phone"] },
    });
    expect(cleared.contact?.company).toBe("Acme");
    expect(cleared.contact?.phone).toBeUndefined();
    expect(
      await caught(crm.contacts.updateContact({ workspaceId: w, id: a.id, fields: { clear: ["status"] } })),
    ).toMatchObject({
      code: "validation_failed",
      details: [{ path: "body.status", message: "unknown field" }],
    });
    expect(
      await caught(crm.contacts.updateContact({ workspaceId: w, id: a.id, fields: { phone: "2222" } })),
    ).toMatchObject({
      grpc: Code.AlreadyExists,
      code: "contact_conflict",
    });
    expect(await caught(crm.contacts.getContact({ workspaceId: w, id: "ct_missing" }))).toMatchObject({
      grpc: Code.NotFound,
      code: "not_found",
    });
  });

  it("lists: limit 0 is the default page, cursors are bound to their filters", async () => {
    const w = ws();
    for (const p of ["301", "302", "303"]) await contact(w, p);
    const page = await crm.contacts.listContacts({ workspaceId: w, limit: 2 });
    expect(page.data).toHaveLength(2);
    expect(page.nextCursor).toBeDefined();
    expect((await crm.contacts.listContacts({ workspaceId: w })).data).toHaveLength(3);
    expect(
      await caught(crm.contacts.listContacts({ workspaceId: w, cursor: page.nextCursor!, tag: "vip" })),
    ).toMatchObject({ code: "invalid_cursor", status: 400 });
    expect(await caught(crm.contacts.listContacts({ workspaceId: w, limit: 501 }))).toMatchObject({
      code: "validation_failed",
      details: [{ path: "query.limit", message: "limit must be between 1 and 500" }],
    });
  });
});

describe("erase handlers (docs/api/contacts.md §POST /contacts/{id}/erase)", () => {
  /** A contact with personal data everywhere crm keeps it: fields, a note, a task, a deal. */
  async function filled(w: string) {
    const member = await crm.members.createMember({
      workspaceId: w,
      name: "Ana",
      email: `ana-${w}@acme.io`,
      role: "owner",
    });
    const up = await crm.contacts.upsertContact({
      workspaceId: w,
      fields: {
        name: "Maria Erasable",
        phone: "+55 11 97777-1234",
        email: "maria.erasable@example.com",
        cpf: "123.456.789-09",
        tags: { values: ["lead"] },
      },
      idempotencyKey: "upsert-maria",
    });
    const ct = up.contact!;
    const pl = await pipeline(w);
    const deal = await crm.opportunities.createOpportunity({
      workspaceId: w,
      input: { contactId: ct.id, pipelineId: pl.id, title: "Plano", valueCents: 12_300n },
    });
    await crm.notes.createNote({
      workspaceId: w,
      contactId: ct.id,
      body: "Maria Erasable asked for a call",
      userId: member.member!.id,
    });
    await crm.tasks.createTask({
      workspaceId: w,
      fields: { title: "Call", body: "ring +55 11 97777-1234", contactId: ct.id },
    });
    return { ct, deal: deal.opportunity!, pl, userId: member.member!.id };
  }

  it("docs/api/contacts.md §POST /contacts/{id}/erase: crm's counts answer; the contact is 404, its deal stays and counts in the funnel", async () => {
    const w = ws();
    const { ct, deal, pl } = await filled(w);
    const res = await crm.contacts.eraseContact({ workspaceId: w, id: ct.id });
    expect(res).toMatchObject({
      id: ct.id,
      erasedAt: now.toISOString(),
      notesDeleted: 1,
      tasksCleared: 1,
      opportunitiesKept: 1,
    });
    expect(await caught(crm.contacts.getContact({ workspaceId: w, id: ct.id }))).toMatchObject({
      code: "not_found",
    });
    const kept = await crm.opportunities.getOpportunity({ workspaceId: w, id: deal.id });
    expect(kept.opportunity).toMatchObject({ contactId: ct.id, valueCents: 12_300n });
    const listed = await crm.opportunities.listOpportunities({ workspaceId: w, contactId: ct.id });
    expect(listed.data.map((d) => d.id)).toEqual([deal.id]);
    const funnel = await crm.funnel.getFunnel({ workspaceId: w, pipelineId: pl.id });
    expect(funnel.funnel?.total).toMatchObject({ count: 1n, valueCents: 12_300n });
    for (const status of ["active", "archived"])
      expect((await crm.contacts.listContacts({ workspaceId: w, status })).data).toEqual([]);
    const [row] = await sql`select * from contacts where id = ${ct.id}`;
    expect(JSON.stringify(row)).not.toMatch(/Maria|97777|erasable|123\.456/i);
    const tasks = await crm.tasks.listTasks({ workspaceId: w });
    expect(tasks.data.map((t) => [t.title, t.body])).toEqual([["Call", undefined]]);
  });

  it("docs/api/contacts.md §POST /contacts/{id}/erase: the phone and e-mail are free for a new contact; the erased one takes no writes", async () => {
    const w = ws();
    const { ct, pl, userId } = await filled(w);
    await crm.contacts.eraseContact({ workspaceId: w, id: ct.id });
    const again = await crm.contacts.upsertContact({
      workspaceId: w,
      fields: { phone: "11977771234", email: "MARIA.erasable@example.com" },
    });
    expect(again.created).toBe(true);
    expect(again.contact!.id).not.toBe(ct.id);
    expect(
      await caught(crm.contacts.updateContact({ workspaceId: w, id: ct.id, fields: { name: "x" } })),
    ).toMatchObject({ code: "not_found" });
    expect(await caught(crm.contacts.archiveContact({ workspaceId: w, id: ct.id }))).toMatchObject({
      code: "not_found",
    });
    expect(
      await caught(
        crm.opportunities.createOpportunity({
          workspaceId: w,
          input: { contactId: ct.id, pipelineId: pl.id, title: "Again" },
        }),
      ),
    ).toMatchObject({ code: "invalid_reference", details: [{ path: "contactId" }] });
    expect(
      await caught(crm.notes.createNote({ workspaceId: w, contactId: ct.id, body: "hi", userId })),
    ).toMatchObject({ code: "invalid_reference", details: [{ path: "contactId" }] });
  });

  it("docs/api/contacts.md §POST /contacts/{id}/erase: a second erase is 404; under the first's Idempotency-Key it replays the first answer", async () => {
    const w = ws();
    const { ct } = await filled(w);
    const seen: string[] = [];
    const onHeader = (h: Headers) => seen.push(h.get(REPLAYED_HEADER) ?? "fresh");
    const first = await crm.contacts.eraseContact({ workspaceId: w, id: ct.id, idempotencyKey: "e1" });
    const replay = await crm.contacts.eraseContact(
      { workspaceId: w, id: ct.id, idempotencyKey: "e1" },
      { onHeader },
    );
    expect(replay).toEqual(first);
    expect(seen).toEqual(["true"]);
    expect(await caught(crm.contacts.eraseContact({ workspaceId: w, id: ct.id }))).toMatchObject({
      grpc: Code.NotFound,
      code: "not_found",
    });
    expect(await caught(crm.contacts.eraseContact({ workspaceId: ws(), id: ct.id }))).toMatchObject({
      code: "not_found",
    });
  });

  it("docs/api/contacts.md §POST /contacts/{id}/erase: a remembered answer that carried the contact replays 404, without its data", async () => {
    const w = ws();
    await filled(w);
    const ct = (await crm.contacts.listContacts({ workspaceId: w })).data[0]!;
    await crm.contacts.eraseContact({ workspaceId: w, id: ct.id });
    const [key] = await sql`
      select response_body from idempotency_keys where workspace_id = ${w} and key = 'upsert-maria'`;
    expect(JSON.stringify(key)).not.toMatch(/Maria|97777/);
    expect(
      await caught(
        crm.contacts.upsertContact({
          workspaceId: w,
          fields: {
            name: "Maria Erasable",
            phone: "+55 11 97777-1234",
            email: "maria.erasable@example.com",
            cpf: "123.456.789-09",
            tags: { values: ["lead"] },
          },
          idempotencyKey: "upsert-maria",
        }),
      ),
    ).toMatchObject({ code: "not_found" });
  });

  it("docs/api/contacts.md §POST /contacts/{id}/erase: a note written while the erasure is in flight waits for it, then is a 422", async () => {
    const w = ws();
    const { ct, userId } = await filled(w);
    let note: Promise<unknown> | undefined;
    await sql.begin(async (tx) => {
      await deps.contacts.erase(w, ct.id, now, SYSTEM, tx);
      note = caught(crm.notes.createNote({ workspaceId: w, contactId: ct.id, body: "late", userId }));
      // The note's check has reached the database and waits on the erasure's lock.
      await new Promise((r) => setTimeout(r, 300));
    });
    expect(await note).toMatchObject({ code: "invalid_reference", details: [{ path: "contactId" }] });
    expect(await sql`select 1 from notes where workspace_id = ${w}`).toEqual([]);
  });

  it("docs/api/events.md §Every event type: contact.erased is written with the erasure, carrying only the id and when", async () => {
    const w = ws();
    const { ct } = await filled(w);
    await crm.contacts.eraseContact({ workspaceId: w, id: ct.id });
    const [row] = await sql<{ envelope: { type: string; data: unknown } }[]>`
      select envelope from outbox where envelope->>'workspaceId' = ${w} and envelope->>'type' = 'contact.erased'`;
    expect(row?.envelope.data).toEqual({ id: ct.id, erasedAt: now.toISOString() });
  });
});

describe("opportunity handlers (docs/api/deals.md §Deal (opportunity); docs/api/conventions.md §Idempotency-Key)", () => {
  it("create under an Idempotency-Key: one deal, the replay is marked in a response header, another input is idempotency_key_reused", async () => {
    const w = ws();
    const [pl, ct] = [await pipeline(w), await contact(w)];
    const input = { contactId: ct.id, pipelineId: pl.id, title: "Plano" };
    const seen: string[] = [];
    const onHeader = (h: Headers) => seen.push(h.get(REPLAYED_HEADER) ?? "fresh");
    const first = await crm.opportunities.createOpportunity(
      { workspaceId: w, input, idempotencyKey: "k1" },
      { onHeader },
    );
    const again = await crm.opportunities.createOpportunity(
      { workspaceId: w, input, idempotencyKey: "k1" },
      { onHeader },
    );
    expect(again.opportunity).toEqual(first.opportunity);
    expect(seen).toEqual(["fresh", "true"]);
    expect(first.opportunity).toMatchObject({ stageId: pl.stages[0]!.id, status: "open", currency: "BRL" });
    expect(
      await caught(
        crm.opportunities.createOpportunity({
          workspaceId: w,
          input: { ...input, title: "Other" },
          idempotencyKey: "k1",
        }),
      ),
    ).toMatchObject({ code: "idempotency_key_reused", status: 422 });
  });

  it("a remembered failure is thrown again, marked replayed; a validation failure is not remembered", async () => {
    const w = ws();
    const ct = await contact(w);
    const bad = { contactId: ct.id, pipelineId: "pl_nope", title: "x" };
    const first = await caught(
      crm.opportunities.createOpportunity({ workspaceId: w, input: bad, idempotencyKey: "k2" }),
    );
    expect(first).toMatchObject({ code: "invalid_reference", details: [{ path: "pipelineId" }] });
    expect(first).not.toHaveProperty("replayed");
    const again = await caught(
      crm.opportunities.createOpportunity({ workspaceId: w, input: bad, idempotencyKey: "k2" }),
    );
    expect(again).toMatchObject({ code: "invalid_reference", replayed: true });
    const blank = { contactId: ct.id, pipelineId: "pl_nope", title: "   " };
    for (let i = 0; i < 2; i++)
      expect(
        await caught(
          crm.opportunities.createOpportunity({ workspaceId: w, input: blank, idempotencyKey: "k3" }),
        ),
      ).toMatchObject({
        code: "validation_failed",
        details: [{ path: "body.title", message: "title must not be empty" }],
      });
    expect(
      await caught(
        crm.opportunities.createOpportunity({ workspaceId: w, input: bad, idempotencyKey: "with space" }),
      ),
    ).toMatchObject({ code: "validation_failed", details: [{ path: "headers.idempotency-key" }] });
  });

  it("PATCH: won then open; a stage of another pipeline is invalid_reference; trash then restore", async () => {
    const w = ws();
    const [pl, other, ct] = [await pipeline(w), await pipeline(w), await contact(w)];
    const { opportunity: deal } = await crm.opportunities.createOpportunity({
      workspaceId: w,
      input: { contactId: ct.id, pipelineId: pl.id, title: "D", valueCents: 500n },
    });
    now = new Date(now.getTime() + 1000);
    const won = await crm.opportunities.updateOpportunity({
      workspaceId: w,
      id: deal!.id,
      fields: { status: "won" },
    });
    expect(won.opportunity).toMatchObject({ status: "won", wonAt: now.toISOString(), valueCents: 500n });
    const open = await crm.opportunities.updateOpportunity({
      workspaceId: w,
      id: deal!.id,
      fields: { status: "open" },
    });
    expect(open.opportunity?.wonAt).toBeUndefined();
    expect(
      await caught(
        crm.opportunities.updateOpportunity({
          workspaceId: w,
          id: deal!.id,
          fields: { stageId: other.stages[0]!.id },
        }),
      ),
    ).toMatchObject({ code: "invalid_reference", details: [{ path: "stageId" }] });
    await crm.opportunities.trashOpportunity({ workspaceId: w, id: deal!.id });
    expect(await caught(crm.opportunities.getOpportunity({ workspaceId: w, id: deal!.id }))).toMatchObject({
      code: "not_found",
    });
    await crm.opportunities.restoreOpportunity({ workspaceId: w, id: deal!.id });
    expect((await crm.opportunities.getOpportunity({ workspaceId: w, id: deal!.id })).opportunity?.id).toBe(
      deal!.id,
    );
  });

  it("funnel: from after to names query.from; an unknown pipeline is invalid_reference", async () => {
    const w = ws();
    expect(
      await caught(
        crm.funnel.getFunnel({ workspaceId: w, from: "2026-02-01T00:00:00Z", to: "2026-01-01T00:00:00Z" }),
      ),
    ).toMatchObject({ code: "validation_failed", details: [{ path: "query.from" }] });
    expect(await caught(crm.funnel.getFunnel({ workspaceId: w, pipelineId: "pl_nope" }))).toMatchObject({
      code: "invalid_reference",
    });
  });
});

describe("reads made at once (an RPC batch) share one statement", () => {
  it("each read gets its own row; another workspace's id, an unknown id and a trashed deal are not_found", async () => {
    const [a, b] = [ws(), ws()];
    const [ca, cb] = [await contact(a, "+55 11 90000-0101"), await contact(b, "+55 11 90000-0102")];
    const pl = await pipeline(a);
    const deals = await Promise.all(
      ["D1", "D2", "D3"].map(
        async (title) =>
          (
            await crm.opportunities.createOpportunity({
              workspaceId: a,
              input: { contactId: ca.id, pipelineId: pl.id, title },
            })
          ).opportunity!,
      ),
    );
    await crm.opportunities.trashOpportunity({ workspaceId: a, id: deals[2]!.id });
    // Started in one turn, as the calls of one batch are: the store reads them in one statement.
    const contacts = await Promise.all(
      [
        [a, ca.id],
        [b, cb.id],
        [a, cb.id],
        [b, ca.id],
        [a, "ct_unknown"],
        [a, ca.id],
      ].map(([workspaceId, id]) => caught(crm.contacts.getContact({ workspaceId: workspaceId!, id: id! }))),
    );
    expect(contacts).toEqual([
      undefined,
      undefined,
      ...Array(3).fill(expect.objectContaining({ code: "not_found" })),
      undefined,
    ]);
    const got = await Promise.all(
      [
        [a, ca.id],
        [b, cb.id],
      ].map(
        async ([workspaceId, id]) =>
          (await crm.contacts.getContact({ workspaceId: workspaceId!, id: id! })).contact,
      ),
    );
    expect(got.map((c) => c?.id)).toEqual([ca.id, cb.id]);
    const opportunities = await Promise.all(
      [
        [a, deals[0]!.id],
        [a, deals[1]!.id],
        [a, deals[2]!.id],
        [b, deals[0]!.id],
      ].map(async ([workspaceId, id]) =>
        crm.opportunities.getOpportunity({ workspaceId: workspaceId!, id: id! }).then(
          (r) => r.opportunity?.title,
          (err) => failure(err).code,
        ),
      ),
    );
    expect(opportunities).toEqual(["D1", "D2", "not_found", "not_found"]);
  });
});

describe("tasks, notes, members, custom fields handlers", () => {
  it("tasks: open filter, completed sets completedAt; notes need a member", async () => {
    const w = ws();
    const t = await crm.tasks.createTask({ workspaceId: w, fields: { title: "Call" } });
    await crm.tasks.updateTask({ workspaceId: w, id: t.task!.id, fields: { completed: true } });
    await crm.tasks.createTask({ workspaceId: w, fields: { title: "Mail" } });
    expect((await crm.tasks.listTasks({ workspaceId: w, open: true })).data.map((x) => x.title)).toEqual([
      "Mail",
    ]);
    expect((await crm.tasks.listTasks({ workspaceId: w, open: false })).data[0]?.completedAt).toBe(
      now.toISOString(),
    );
    const ct = await contact(w);
    expect(
      await caught(
        crm.notes.createNote({ workspaceId: w, contactId: ct.id, body: "hi", userId: "usr_nope" }),
      ),
    ).toMatchObject({
      code: "invalid_reference",
      details: [{ path: "userId" }],
    });
  });

  it("custom fields: a select needs options; a duplicate fieldKey is a conflict; members need an e-mail", async () => {
    const w = ws();
    expect(
      await caught(
        crm.customFields.createCustomField({
          workspaceId: w,
          entity: "contact",
          fieldKey: "plan",
          label: "Plan",
          type: "select",
        }),
      ),
    ).toMatchObject({
      code: "validation_failed",
      details: [{ path: "body.options", message: "a select field needs options" }],
    });
    const field = { workspaceId: w, entity: "contact", fieldKey: "plan", label: "Plan", type: "text" };
    await crm.customFields.createCustomField(field);
    expect(await caught(crm.customFields.createCustomField(field))).toMatchObject({
      code: "conflict",
      status: 409,
    });
    expect(
      await caught(crm.members.createMember({ workspaceId: w, name: "Ana", email: "nope", role: "owner" })),
    ).toMatchObject({
      code: "validation_failed",
      details: [{ path: "body.email" }],
    });
  });
});

describe("pipelines, custom fields and members kept in memory: every list reads their ids (and versions) from the database", () => {
  /** A second copy of crm on the same database, with memory of its own. */
  const otherCopy = () => {
    const other = crmDeps({ sql, clock, emit: async () => {} });
    const transport = createRouterTransport(routes(other), {
      router: { interceptors: [errorInterceptor(pino({ level: "silent" }))] },
    });
    return {
      pipelines: createClient(SERVICES.crm.pipelines, transport),
      customFields: createClient(SERVICES.crm.customFields, transport),
      contacts: createClient(SERVICES.crm.contacts, transport),
      members: createClient(SERVICES.crm.members, transport),
    };
  };
  const names = (res: { itemsJson: string[] }) =>
    res.itemsJson.map((json) => (JSON.parse(json) as { name?: string; fieldKey?: string }).name ?? "");

  it("docs/api/deals.md §GET /pipelines: a pipeline made through another copy is in the next list, in creation order, as JSON equal to its message", async () => {
    const w = ws();
    const other = otherCopy();
    await crm.pipelines.createPipeline({ workspaceId: w, name: "First", stageNames: ["A", "B"] });
    expect(names(await other.pipelines.listPipelines({ workspaceId: w, apiJson: true }))).toEqual(["First"]);
    now = new Date(now.getTime() + 1000);
    await crm.pipelines.createPipeline({ workspaceId: w, name: "Second", stageNames: ["C"] });
    const json = await other.pipelines.listPipelines({ workspaceId: w, apiJson: true });
    expect(names(json)).toEqual(["First", "Second"]);
    expect(json.data).toEqual([]);
    const messages = await other.pipelines.listPipelines({ workspaceId: w });
    expect(json.itemsJson.map((j) => JSON.parse(j))).toEqual(
      messages.data.map((p) => ({
        id: p.id,
        name: p.name,
        stages: p.stages.map(({ id, name, position }) => ({ id, name, position })),
      })),
    );
    expect(json.ids).toEqual(messages.data.map((p) => p.id));
    // Another workspace's list does not see them, from memory or not.
    expect((await other.pipelines.listPipelines({ workspaceId: ws(), apiJson: true })).ids).toEqual([]);
  });

  it("docs/api/contacts.md §GET /custom-fields: a definition made through another copy is listed and checked at once, by entity", async () => {
    const w = ws();
    const other = otherCopy();
    // One second apart: the list's order is the order of creation.
    const later = (def: Parameters<typeof crm.customFields.createCustomField>[0]) => {
      now = new Date(now.getTime() + 1000);
      return crm.customFields.createCustomField(def);
    };
    const field = (fieldKey: string, entity: string) => ({
      workspaceId: w,
      entity,
      fieldKey,
      label: fieldKey,
      type: "text",
    });
    await later(field("plan", "contact"));
    const keys = async (entity?: string) =>
      (await other.customFields.listCustomFields({ workspaceId: w, entity, apiJson: true })).itemsJson.map(
        (j) => (JSON.parse(j) as { fieldKey: string }).fieldKey,
      );
    expect(await keys("contact")).toEqual(["plan"]);
    await later(field("seats", "opportunity"));
    await later(field("region", "contact"));
    expect(await keys("contact")).toEqual(["plan", "region"]);
    expect(await keys()).toEqual(["plan", "region", "seats"]);
    // A contact write on the other copy, which has read the definitions, accepts one made since.
    const contacts = other.contacts;
    await contacts.upsertContact({
      workspaceId: w,
      fields: { phone: "11 5555-0101", customFields: { plan: "basic" } },
    });
    await later(field("tier", "contact"));
    const upserted = await contacts.upsertContact({
      workspaceId: w,
      fields: { phone: "11 5555-0101", customFields: { tier: "gold" } },
    });
    expect(upserted.contact?.customFields).toEqual({ plan: "basic", tier: "gold" });
  });

  it("docs/api/admin.md §Members: a member changed through another copy, or by any update of its row, is listed as it is now", async () => {
    const w = ws();
    const other = otherCopy();
    const json = async () =>
      (await other.members.listMembers({ workspaceId: w, apiJson: true })).itemsJson.map(
        (j) => JSON.parse(j) as { id: string; name: string; active: boolean; role: string },
      );
    const ana = (
      await crm.members.createMember({ workspaceId: w, name: "Ana", email: "ana@x.co", role: "owner" })
    ).member!;
    now = new Date(now.getTime() + 1000);
    await crm.members.createMember({ workspaceId: w, name: "Bia", email: "bia@x.co", role: "member" });
    expect((await json()).map((m) => m.name)).toEqual(["Ana", "Bia"]);
    await crm.members.updateMember({ workspaceId: w, id: ana.id, name: "Ana Lima", active: false });
    expect((await json())[0]).toMatchObject({ id: ana.id, name: "Ana Lima", active: false });
    // Any update of the row raises its version (a trigger), whichever code made it.
    await sql`update members set role = 'admin' where workspace_id = ${w} and id = ${ana.id}`;
    expect((await json())[0]).toMatchObject({ name: "Ana Lima", role: "admin" });
    const messages = await other.members.listMembers({ workspaceId: w });
    expect(await json()).toEqual(messages.data.map(({ $typeName, ...m }) => m));
  });
});

describe("list pages written from raw rows (packages/rpc row-pages.ts)", () => {
  it("GET /contacts, /opportunities and /tasks: each page is the object path's page, written as bytes", async () => {
    const w = ws();
    const pl = await pipeline(w);
    for (const [i, name] of ['Ana "Zé" {Conceição}', "Bob, Jr.", "曾 \\ 🙂"].entries()) {
      const c = (
        await crm.contacts.upsertContact({
          workspaceId: w,
          fields: {
            phone: `+55 11 90000-100${i}`,
            name,
            tags: { values: [name, "NULL", ' {x},"y" '] },
            utm: { source: name, campaign: "c" },
          },
        })
      ).contact!;
      now = new Date(now.getTime() + 1);
      const d = await crm.opportunities.createOpportunity({
        workspaceId: w,
        input: {
          contactId: c.id,
          pipelineId: pl.id,
          title: name,
          valueCents: BigInt(i * 1000),
          tags: [name],
        },
      });
      await crm.tasks.createTask({
        workspaceId: w,
        fields: {
          title: name,
          body: i ? name : undefined,
          contactId: c.id,
          opportunityId: d.opportunity!.id,
        },
      });
    }
    const impl = {
      contacts: contactService(deps),
      opportunities: opportunityService(deps),
      tasks: taskService(deps),
    };
    const lists = [
      {
        page: (cursor?: string) =>
          impl.contacts.listContacts({ workspaceId: w, limit: 2, cursor } as never, {} as never),
        objects: async () =>
          (await deps.contacts.list(w, { status: "active" }, 10)).map((r) => contactWire.proto(r)),
        schema: ListContactsResponseSchema,
      },
      {
        page: (cursor?: string) =>
          impl.opportunities.listOpportunities({ workspaceId: w, limit: 2, cursor } as never, {} as never),
        objects: async () => (await deps.deals.list(w, {}, 10)).map((r) => dealWire.proto(r)),
        schema: ListOpportunitiesResponseSchema,
      },
      {
        page: (cursor?: string) =>
          impl.tasks.listTasks({ workspaceId: w, limit: 2, cursor } as never, {} as never),
        objects: async () => (await deps.tasks.list(w, {}, 10)).map((r) => taskWire.proto(r)),
        schema: ListTasksResponseSchema,
      },
    ];
    for (const list of lists) {
      const first = (await list.page()) as MessageShape<typeof list.schema>;
      expect(encodedBytesOf(first)).toBeDefined();
      const second = (await list.page(first.nextCursor)) as MessageShape<typeof list.schema>;
      expect(encodedBytesOf(second)).toBeDefined();
      expect(second.nextCursor).toBeUndefined();
      const expected = create(list.schema, { data: (await list.objects()) as never });
      expect(
        toJson(list.schema, create(list.schema, { data: [...first.data, ...second.data] as never })),
      ).toEqual(toJson(list.schema, expected));
    }
  });
});
