import { naming } from "@funil/config";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { startStack } from "../../scripts/stack.mjs";
import { request } from "../helpers.js";
import { dropDatabases, stackEnv } from "../private-stack.js";
import { type Receiver, startReceiver } from "../receiver.js";

/**
 * Nothing grows without bound (docs/operations.md §Retention): a stack of its own with short retentions
 * takes writes for a while, each one also delivered to a webhook subscription, and what it keeps (the
 * consumers' inbox rows, the streams' messages, the webhook deliveries, their attempt log and the event
 * log) levels off instead of growing with what was written, then goes once the writes stop.
 *
 * `npm test` runs it for a few seconds with retentions of seconds. SOAK_MINUTES=30 runs it for that long
 * with minute-scale retentions and prints the sizes it sampled.
 */
const MINUTES = Number(process.env.SOAK_MINUTES ?? 0);
const LONG = MINUTES > 0;
const WRITE_MS = LONG ? MINUTES * 60_000 : 12_000;
const STREAM_AGE_MS = LONG ? 60_000 : 2_000;
const INBOX_MS = LONG ? 90_000 : 3_000;
// The webhooks service's deliveries, attempts and event log, in days as its settings take them.
const WEBHOOKS_KEPT_MS = LONG ? 90_000 : 3_000;
const WEBHOOKS_KEPT_DAYS = String(WEBHOOKS_KEPT_MS / 86_400_000);
const SWEEP_MS = LONG ? 10_000 : 500;
const SAMPLE_MS = LONG ? 10_000 : 1_000;
/**
 * The long run writes at most this many contacts a second (SOAK_RATE), under what one subscription's
 * deliveries keep up with on a shared 2-core machine: what it measures is retention, not how far the sender
 * falls behind when the machine is busy (a backlog of pending deliveries, not swept, would leave the
 * deliveries that are over low while it lasts and make them climb as it drains). The short run writes
 * as fast as it can.
 */
const RATE = Number(process.env.SOAK_RATE ?? 25);

const ENV = `${process.env.FUNIL_TEST_ENV ?? "test"}_soak`;
const names = naming(ENV);
const SERVER = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const STREAMS = ["EVENTS", "INGEST", "PLATFORM", "WEBHOOK_DELIVERIES"];
const INBOXES = ["webhooks", "learning", "timeline", "crm", "scheduling"];

// biome-ignore lint/suspicious/noExplicitAny: the stack script has no types
let stack: any;
let server: postgres.Sql;
let nc: Awaited<ReturnType<typeof connect>>;
let rx: Receiver;

beforeAll(async () => {
  await dropDatabases(ENV, SERVER);
  const env = stackEnv({
    FUNIL_ENV: ENV,
    LOG_LEVEL: "warn",
    RATE_LIMIT_MAX: "1000000",
    EVENTS_MAX_AGE_MS: String(STREAM_AGE_MS),
    INGEST_MAX_AGE_MS: String(STREAM_AGE_MS),
    PLATFORM_MAX_AGE_MS: String(STREAM_AGE_MS),
    WEBHOOK_JOBS_MAX_AGE_MS: String(STREAM_AGE_MS),
    INBOX_RETENTION_MS: String(INBOX_MS),
    RETENTION_SWEEP_MS: String(SWEEP_MS),
    WEBHOOK_ATTEMPT_RETENTION_DAYS: WEBHOOKS_KEPT_DAYS,
    WEBHOOK_DELIVERY_RETENTION_DAYS: WEBHOOKS_KEPT_DAYS,
    EVENT_LOG_RETENTION_DAYS: WEBHOOKS_KEPT_DAYS,
    // The receiver listens on loopback.
    WEBHOOK_ALLOW_HTTP: "true",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  });
  stack = await startStack({ env, port: 0, stdio: "ignore", log: () => {} });
  server = postgres(SERVER, { max: 1, onnotice: () => {} });
  nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
  rx = await startReceiver();
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await nc?.close();
  await server?.end();
  await rx?.close();
  await dropDatabases(ENV, SERVER);
});

const database = (service: string) =>
  postgres(SERVER.replace(/\/[^/]*$/, `/${names.database(service)}`), { max: 1, onnotice: () => {} });

/**
 * Rows in every service's inbox, messages in every stream, and the webhooks service's rows, now. Deliveries
 * still pending are counted apart (`pending`, not one of the sizes that must level off): retention lets go
 * of the ones that are over, never of one still to be sent (docs/operations.md §Retention), and how many
 * wait depends on how fast the receiver is reached: one subscription's POSTs in flight are bounded, and
 * this receiver shares its process with the writes.
 */
async function sizes() {
  let inbox = 0;
  for (const service of INBOXES) {
    const db = database(service);
    try {
      inbox += (await db<{ n: number }[]>`select count(*)::int as n from inbox`)[0]!.n;
    } finally {
      await db.end();
    }
  }
  const jsm = await jetstreamManager(nc);
  let messages = 0;
  for (const stream of STREAMS) messages += (await jsm.streams.info(names.stream(stream))).state.messages;
  const db = database("webhooks");
  try {
    const [rows] = await db<{ deliveries: number; pending: number; attempts: number; events: number }[]>`
      select (select count(*)::int from deliveries where status <> 'pending') as deliveries,
        (select count(*)::int from deliveries where status = 'pending') as pending,
        (select count(*)::int from attempts) as attempts, (select count(*)::int from event_log) as events`;
    return { inbox, messages, ...rows! };
  } finally {
    await db.end();
  }
}

type Size = "inbox" | "messages" | "deliveries" | "attempts" | "events";
const KEPT: Size[] = ["inbox", "messages", "deliveries", "attempts", "events"];

describe("retention: what the stack keeps levels off (docs/operations.md §Retention)", () => {
  it(
    `under ${LONG ? `${MINUTES} minutes` : "a few seconds"} of writes the inbox rows, stream messages, webhook deliveries, attempts and event log level off, and go once the writes stop`,
    async () => {
      const admin = (method: string, path: string, body?: unknown) =>
        request(method, `${stack.gatewayUrl}/admin/v1${path}`, body, {
          authorization: `Bearer ${stack.adminToken}`,
        });
      const ws = await admin("POST", "/workspaces", { name: "Soak" });
      const key = await admin("POST", `/workspaces/${ws.body.id}/keys`, {
        name: "soak",
        scopes: ["contacts.write", "contacts.read", "webhooks.manage"],
      });
      const auth = { authorization: `Bearer ${key.body.secret}` };
      const hook = await request(
        "POST",
        `${stack.gatewayUrl}/api/v1/webhooks`,
        { url: rx.url("/soak"), events: ["contact.created"] },
        auth,
      );
      expect(hook.status).toBe(201);

      let written = 0;
      const samples: Array<{ at: number; written: number; pending: number } & Record<Size, number>> = [];
      const started = Date.now();
      let nextSample = started + SAMPLE_MS;
      while (Date.now() - started < WRITE_MS) {
        const answers = await Promise.all(
          Array.from({ length: 5 }, () =>
            request(
              "POST",
              `${stack.gatewayUrl}/api/v1/contacts`,
              { name: "Soak", email: `soak-${written++}-${Math.random()}@soak.test` },
              auth,
            ),
          ),
        );
        for (const a of answers) expect(a.status).toBe(201);
        const due = started + (written / RATE) * 1000;
        if (LONG && Date.now() < due) await new Promise((r) => setTimeout(r, due - Date.now()));
        if (Date.now() >= nextSample) {
          samples.push({ at: Date.now() - started, written, ...(await sizes()) });
          nextSample += SAMPLE_MS;
        }
      }
      if (LONG) console.table(samples);

      // What is kept is what the last retention's writes left, not what the whole run wrote: once the run
      // is longer than twice the longest retention, the last samples stay under what the first half of
      // the run alone wrote.
      const last = samples.at(-1)!;
      const half = samples.find((s) => s.at >= WRITE_MS / 2)!;
      for (const k of KEPT) expect(last[k], k).toBeLessThan(half.written);
      // The writes did reach the receiver, and the webhooks service kept something of them for a while.
      expect(rx.at("/soak").length).toBeGreaterThan(0);
      for (const k of ["deliveries", "attempts", "events"] as const)
        expect(Math.max(...samples.map((s) => s[k])), k).toBeGreaterThan(0);
      const lateThird = samples.filter((s) => s.at >= (2 * WRITE_MS) / 3);
      const middleThird = samples.filter((s) => s.at >= WRITE_MS / 3 && s.at < (2 * WRITE_MS) / 3);
      if (LONG) {
        const peak = (xs: typeof samples, k: Size) => Math.max(...xs.map((s) => s[k]));
        for (const k of KEPT) expect(peak(lateThird, k), k).toBeLessThanOrEqual(1.3 * peak(middleThird, k));
      }

      // Once the writes stop, everything goes within a retention and a sweep.
      // In the short run a job waits longer behind the writes than its stream's 2 s keeps it, so deliveries
      // still pending when their job is dropped stay pending (WEBHOOK_JOBS_MAX_AGE_MS must outlive the
      // sender's backlog and retry schedule, docs/operations.md §Retention); the paced long run has no such
      // backlog, and its pending deliveries must be sent and go too.
      const left = async () => {
        const { pending, ...rest } = await sizes();
        return LONG ? { ...rest, pending } : rest;
      };
      await expect
        .poll(left, {
          timeout: 3 * Math.max(STREAM_AGE_MS, INBOX_MS, WEBHOOKS_KEPT_MS) + 4 * SWEEP_MS + 10_000,
          interval: 250,
        })
        .toEqual({
          inbox: 0,
          messages: 0,
          deliveries: 0,
          attempts: 0,
          events: 0,
          ...(LONG ? { pending: 0 } : {}),
        });
    },
    WRITE_MS + 180_000,
  );
});
