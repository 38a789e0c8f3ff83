import { naming } from "@funil/config";
import { migrate, openDatabase, type Sql, SYSTEM, writeEvent } from "@funil/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations, subscriptionEvents } from "../server.js";
import { deliveryStore } from "./deliveries.js";
import { erasureStore } from "./erasures.js";
import { subscriptionStore } from "./subscriptions.js";

/** The webhooks' part of an erasure on the real test database: stored bodies redacted, once. */
const names = naming(`${process.env.FUNIL_TEST_ENV}_erasures`);
let sql: Sql;
/** A subscription's events go to the outbox, as the service's do. */
const events = subscriptionEvents(async (tx, e) => {
  await writeEvent(tx, (t) => names.subject(`events.${t}`), e);
});
const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms);

beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    names.database("webhooks"),
  );
  await migrate(sql, migrations);
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

describe("contact.erased in the webhooks service (docs/api/contacts.md §POST /contacts/{id}/erase)", () => {
  it("docs/api/contacts.md §POST /contacts/{id}/erase: stored bodies and receivers' answers about the contact are redacted once; a later event about it is fanned out redacted", async () => {
    const deliveries = deliveryStore(sql, (id) => names.subject(`webhook.deliveries.${id}`), events);
    const erasures = erasureStore(sql);
    const workspaceId = `ws_${Date.now()}`;
    await subscriptionStore(sql, events).create(
      workspaceId,
      {
        keyId: "key_x",
        url: "https://example.com/hook",
        events: ["contact.created", "contact.updated", "meeting.booked"],
        description: null,
      },
      "whsec_test",
      at(0),
      SYSTEM,
    );
    const contact = (id: string, n: number) => ({
      id: `evt_${workspaceId}_${id}_${n}`,
      type: n === 0 ? "contact.created" : "contact.updated",
      workspaceId,
      occurredAt: at(1_000 + n).toISOString(),
      seq: 1 + n,
      data: { id, name: `Maria ${id}`, phone: "+55 11 97777-1234", tags: ["vip"] },
    });
    const meeting = {
      id: `evt_${workspaceId}_m`,
      type: "meeting.booked",
      workspaceId,
      occurredAt: at(1_500).toISOString(),
      seq: 100,
      data: { id: "apt_1", contactId: "ct_gone", contactName: "Maria ct_gone", title: "Demo" },
    };
    await deliveries.fanOut([contact("ct_gone", 0), contact("ct_kept", 0), meeting], at(2_000));
    const [first] = await sql<{ id: string; subscriptionId: string }[]>`
      select id, subscription_id from deliveries where workspace_id = ${workspaceId} and body like '%Maria ct_gone%' limit 1`;
    await sql`
      insert into attempts (id, delivery_id, subscription_id, workspace_id, event, at, succeeded, duration_ms, response_body)
      values ('att_echo', ${first!.id}, ${first!.subscriptionId}, ${workspaceId}, 'contact.created', ${at(3_000)}, true, 5,
              'got Maria ct_gone')`;

    const erasure = {
      eventId: `evt_erase_${workspaceId}`,
      workspaceId,
      contactId: "ct_gone",
      erasedAt: at(4_000),
    };
    expect(await erasures.erase(erasure)).toBe(true);
    expect(await erasures.erase(erasure)).toBe(false);
    // An event about the contact that comes after its erasure (late, redelivered).
    await deliveries.fanOut([contact("ct_gone", 1)], at(5_000));

    const bodies = await sql<{ event: string; body: string }[]>`
      select event, body from deliveries where workspace_id = ${workspaceId} order by created_at, event`;
    expect(bodies).toHaveLength(4);
    const gone = bodies.filter((b) => b.body.includes("ct_gone"));
    expect(gone).toHaveLength(3);
    for (const b of gone) expect(b.body).not.toMatch(/Maria|97777|vip/);
    expect(bodies.find((b) => b.body.includes("ct_kept"))?.body).toMatch(/Maria ct_kept/);
    expect(JSON.parse(gone.find((b) => b.event === "meeting.booked")!.body).data).toMatchObject({
      id: "apt_1",
      contactId: "ct_gone",
      contactName: null,
      title: null,
    });
    const [attempt] = await sql`select response_body from attempts where id = 'att_echo'`;
    expect(attempt).toEqual({ responseBody: null });
    // docs/api/events.md §Catch-up: GET /events: the event log's copies are redacted the same way.
    const logged = await sql<{ body: string }[]>`
      select body from event_log where workspace_id = ${workspaceId} and body like '%ct_gone%'`;
    expect(logged.length).toBeGreaterThanOrEqual(3);
    for (const l of logged) expect(l.body).not.toMatch(/Maria|97777|vip/);
  });
});
