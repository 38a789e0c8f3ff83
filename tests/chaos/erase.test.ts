import { naming } from "@funil/config";
import { jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { startStack } from "../../scripts/stack.mjs";
import { ALL_SCOPES, request } from "../helpers.js";
import { dropDatabases, stackEnv } from "../private-stack.js";

/**
 * docs/api/contacts.md §POST /contacts/{id}/erase under faults: the timeline and scheduling are down when a contact
 * is erased; crm answers at once, and each erases its copies once it is back, from the event that
 * waited for it in the stream, including an interaction ingested while it was down. A stack of its
 * own (its own databases, streams and subjects), on the machine's PostgreSQL, NATS and Redis.
 */
const ENV = `${process.env.FUNIL_TEST_ENV ?? "test"}_chaos_erase`;
const names = naming(ENV);
const SERVER = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

// biome-ignore lint/suspicious/noExplicitAny: plain ESM script
let stack: any;
let nc: NatsConnection;
const databases = new Map<string, postgres.Sql>();
function database(service: string) {
  let sql = databases.get(service);
  if (!sql) {
    const url = new URL(SERVER);
    url.pathname = `/${names.database(service)}`;
    sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
    databases.set(service, sql);
  }
  return sql;
}

beforeAll(async () => {
  await dropDatabases(ENV);
  stack = await startStack({
    env: stackEnv({ FUNIL_ENV: ENV, LOG_LEVEL: "warn", RATE_LIMIT_MAX: "1000000" }),
    port: 0,
    stdio: process.env.CHAOS_LOG ?? "ignore",
    log: () => {},
  });
  nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
}, 120_000);
afterAll(async () => {
  await Promise.all([...databases.values()].map((sql) => sql.end()));
  await nc?.close();
  await stack?.stop();
});

const person = { name: "Olívia Caída", phone: "+55 21 98765-4321", email: "olivia.caida@example.com" };
const holds = (text: unknown) => /Caída|98765|olivia\.caida/i.test(JSON.stringify(text));

describe("docs/api/contacts.md §POST /contacts/{id}/erase: a service down during the erasure erases once it is back", () => {
  it("docs/api/contacts.md §POST /contacts/{id}/erase: timeline and scheduling down at the erasure; both erase when restarted, nothing personal stays", async () => {
    const base = stack.gatewayUrl;
    const admin = (method: string, path: string, body?: unknown) =>
      request(method, `${base}/admin/v1${path}`, body, { authorization: `Bearer ${stack.adminToken}` });
    const ws = await admin("POST", "/workspaces", { name: "Erase chaos" });
    const key = await admin("POST", `/workspaces/${ws.body.id}/keys`, { name: "erase", scopes: ALL_SCOPES });
    const call = (method: string, path: string, body?: unknown) =>
      request(method, `${base}/api/v1${path}`, body, { authorization: `Bearer ${key.body.secret}` });
    const workspaceId = ws.body.id as string;
    const js = jetstream(nc);

    const owner = await admin("POST", `/workspaces/${workspaceId}/members`, {
      name: "Ana",
      email: "ana@example.com",
      role: "atendente",
    });
    const cal = await admin("POST", `/workspaces/${workspaceId}/calendars`, {
      key: "demo",
      name: "Demo",
      durationMin: 30,
      dailyCap: 50,
      timezone: "UTC",
      availability: [0, 1, 2, 3, 4, 5, 6].map((weekday) => ({ weekday, start: "00:00", end: "24:00" })),
      assigneeUserIds: [owner.body.id],
    });
    expect(cal.status, JSON.stringify(cal.body)).toBe(201);
    const created = await call("POST", "/contacts", person);
    expect(created.status).toBe(201);
    const contactId = created.body.id as string;
    const message = (rowId: string) => ({
      workspaceId,
      rowId,
      channel: "whatsapp",
      direction: "inbound",
      contactId,
      conversationId: "cv-1",
      channelInstanceId: "inst-1",
      senderPhone: person.phone,
      sentAt: "2026-01-10T10:00:00.000Z",
      preview: `Sou ${person.name}`,
    });
    const day = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const booked = await call("POST", "/appointments", {
      calendarId: cal.body.id,
      contactId,
      assigneeUserId: owner.body.id,
      startAt: `${day}T10:00:00.000Z`,
      title: `Demo ${person.name}`,
    });
    expect(booked.status, JSON.stringify(booked.body)).toBe(201);
    await js.publish(names.subject("ingest.inbox.message"), JSON.stringify(message("1")));
    const timeline = database("timeline");
    const scheduling = database("scheduling");
    await expect
      .poll(
        async () => (await timeline`select preview from interactions where contact_id = ${contactId}`).length,
        {
          timeout: 10_000,
        },
      )
      .toBe(1);

    // Both down; a message of the contact arrives meanwhile, and the contact is erased.
    await Promise.all([stack.stopCopy("timeline", 0), stack.stopCopy("scheduling", 0)]);
    await js.publish(names.subject("ingest.inbox.message"), JSON.stringify(message("2")));
    const erased = await call("POST", `/contacts/${contactId}/erase`);
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(erased.body.asynchronous).toEqual(["timeline", "scheduling", "webhooks"]);
    expect((await call("GET", `/opportunities?contactId=${contactId}`)).status).toBe(200);
    // Nothing of theirs is erased while they are down.
    expect(
      holds(await timeline`select preview, sender_phone from interactions where contact_id = ${contactId}`),
    ).toBe(true);
    expect(
      holds(await scheduling`select contact_name, title from appointments where contact_id = ${contactId}`),
    ).toBe(true);

    await Promise.all([stack.startCopy("timeline", 0), stack.startCopy("scheduling", 0)]);
    await expect
      .poll(
        async () => {
          const interactions = await timeline`
            select id, preview, sender_phone from interactions where contact_id = ${contactId} order by id`;
          const meetings = await scheduling`
            select contact_name, title from appointments where contact_id = ${contactId}`;
          return { interactions, meetings };
        },
        { timeout: 20_000, interval: 200 },
      )
      .toEqual({
        interactions: [
          { id: "msg:1", preview: null, sender_phone: null },
          { id: "msg:2", preview: null, sender_phone: null },
        ],
        meetings: [{ contact_name: null, title: null }],
      });
    expect(await timeline`select 1 from contact_touches where contact_id = ${contactId}`).toEqual([]);
    expect((await call("GET", `/contacts/${contactId}`)).status).toBe(404);
  }, 120_000);
});
