import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { naming } from "@funil/config";
import { jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { startPgBouncer } from "../../scripts/infra.mjs";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { SERVICES, startStack } from "../../scripts/stack.mjs";
import { request, waitFor } from "../helpers.js";
import { dropDatabases, stackEnv } from "../private-stack.js";
import { type Receiver, startReceiver } from "../receiver.js";

/**
 * A whole stack whose every database connection goes through a private PgBouncer in session mode: the
 * services create their databases, migrate, LISTEN, and serve the main paths through it, and PostgreSQL
 * sees no connection of theirs that PgBouncer did not open. No PgBouncer (not installed and not
 * installable) fails here, with the reason: nothing is skipped.
 */
const run = promisify(execFile);
const ENV = `${process.env.FUNIL_TEST_ENV ?? "test"}_pgb`;
const names = naming(ENV);
const SERVER = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
/** Idle pooled connections are released after this (DATABASE_IDLE_TIMEOUT_S), short for the test. */
const IDLE_S = 2;

// biome-ignore lint/suspicious/noExplicitAny: plain ESM script
let bouncer: any;
// biome-ignore lint/suspicious/noExplicitAny: plain ESM script
let stack: any;
let server: postgres.Sql;
let nc: NatsConnection;
let receiver: Receiver;
type Call = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => ReturnType<typeof request>;
let call: Call;
let adminCall: (method: string, path: string, body?: unknown) => ReturnType<typeof request>;
let workspaceId = "";

beforeAll(async () => {
  bouncer = await startPgBouncer({ databaseUrl: SERVER, log: () => {} }).catch((err: Error) => {
    throw new Error(
      `PgBouncer could not be started (CI installs the Debian package pgbouncer): ${err.message}`,
    );
  });
  server = postgres(SERVER, { max: 1, onnotice: () => {} });
  await dropDatabases(ENV, SERVER);
  const env = stackEnv({
    FUNIL_ENV: ENV,
    DATABASE_URL: bouncer.url,
    DATABASE_IDLE_TIMEOUT_S: String(IDLE_S),
    LOG_LEVEL: "warn",
    WEBHOOK_ALLOW_HTTP: "true",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  });
  stack = await startStack({ env, port: 0, stdio: process.env.PGB_LOG ?? "ignore", log: () => {} });
  nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
  receiver = await startReceiver();
  adminCall = (method, path, body) =>
    request(method, `${stack.gatewayUrl}/admin/v1${path}`, body, {
      authorization: `Bearer ${stack.adminToken}`,
    });
  const ws = await adminCall("POST", "/workspaces", { name: "PgBouncer" });
  const key = await adminCall("POST", `/workspaces/${ws.body.id}/keys`, {
    name: "pgbouncer",
    scopes: [
      "contacts.read",
      "contacts.write",
      "opportunities.read",
      "opportunities.write",
      "calendars.read",
      "calendars.write",
      "interactions.read",
      "webhooks.manage",
    ],
  });
  workspaceId = ws.body.id;
  call = (method, path, body, headers = {}) =>
    request(method, `${stack.gatewayUrl}/api/v1${path}`, body, {
      authorization: `Bearer ${key.body.secret}`,
      ...headers,
    });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await Promise.all([nc?.close(), receiver?.close(), server?.end()]);
  await bouncer?.stop();
});

/** pg_stat_activity of the stack's databases: who PostgreSQL sees connected. */
async function backends() {
  return server<{ pid: number; datname: string; applicationName: string }[]>`
    select pid, datname, application_name as "applicationName" from pg_stat_activity
    where datname like ${`funil\\_${ENV}\\_%`}`;
}

/** One SHOW of PgBouncer's console, as rows keyed by column. */
async function console_(what: "servers" | "clients"): Promise<Array<Record<string, string>>> {
  const url = new URL(bouncer.url);
  url.pathname = "/pgbouncer";
  const { stdout } = await run("psql", [
    url.toString(),
    "-A",
    "-F",
    "\t",
    "-P",
    "footer=off",
    "-c",
    `show ${what}`,
  ]);
  const [header, ...lines] = stdout.trim().split("\n");
  const columns = header!.split("\t");
  return lines.map((line) => Object.fromEntries(line.split("\t").map((v, i) => [columns[i]!, v])));
}

describe("PgBouncer in session mode in front of PostgreSQL", () => {
  it("the main paths work through it: upsert, Idempotency-Key replay, cursor pages, booking, NATS ingest, webhook", async () => {
    const hook = await call("POST", "/webhooks", { url: receiver.url("/pgb"), events: ["contact.created"] });
    expect(hook.status).toBe(201);

    const created = await call("POST", "/contacts", { name: "Ana", phone: "+55 11 91234-0001" });
    expect(created.status).toBe(201);
    const upserted = await call("POST", "/contacts", { name: "Ana Maria", phone: "+55 11 91234-0001" });
    expect(upserted.status).toBe(200);
    expect(upserted.body.id).toBe(created.body.id);

    const pipeline = await adminCall("POST", `/workspaces/${workspaceId}/pipelines`, {
      name: "Vendas",
      stages: [{ name: "Novo" }, { name: "Ganho" }],
    });
    expect(pipeline.status).toBe(201);
    const deal = { title: "Deal", contactId: created.body.id, pipelineId: pipeline.body.id, valueCents: 100 };
    const first = await call("POST", "/opportunities", deal, { "idempotency-key": "pgb-deal-1" });
    const replay = await call("POST", "/opportunities", deal, { "idempotency-key": "pgb-deal-1" });
    expect(first.status).toBe(201);
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);

    for (const n of [2, 3, 4])
      await call("POST", "/contacts", { name: `C${n}`, phone: `+55 11 91234-000${n}` });
    const page1 = await call("GET", "/contacts?limit=2");
    expect(page1.status).toBe(200);
    expect(page1.body.data).toHaveLength(2);
    const page2 = await call("GET", `/contacts?limit=2&cursor=${page1.body.nextCursor}`);
    expect(page2.status).toBe(200);
    const listed = [...page1.body.data, ...page2.body.data].map((c: { id: string }) => c.id);
    expect(new Set(listed).size).toBe(4);

    const member = await adminCall("POST", `/workspaces/${workspaceId}/members`, {
      name: "Closer",
      email: "closer@pgb.test",
      role: "atendente",
    });
    const calendar = await adminCall("POST", `/workspaces/${workspaceId}/calendars`, {
      key: "pgb",
      name: "PgBouncer",
      durationMin: 30,
      dailyCap: 10,
      timezone: "UTC",
      assigneeUserIds: [member.body.id],
      availability: [0, 1, 2, 3, 4, 5, 6].map((weekday) => ({ weekday, start: "00:00", end: "24:00" })),
    });
    expect(calendar.status, JSON.stringify(calendar.body)).toBe(201);
    const startAt = `${new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10)}T10:00:00.000Z`;
    const booked = await call(
      "POST",
      "/appointments",
      { calendarId: calendar.body.id, contactId: created.body.id, startAt, assigneeUserId: member.body.id },
      { "idempotency-key": "pgb-apt-1" },
    );
    expect(booked.status, JSON.stringify(booked.body)).toBe(201);
    const meetings = await call("GET", "/appointments?calendarKey=pgb");
    expect(meetings.body.data.map((m: { id: string }) => m.id)).toEqual([booked.body.id]);

    await jetstream(nc).publish(
      names.subject("ingest.inbox.message"),
      JSON.stringify({
        workspaceId,
        rowId: "pgb-1",
        channel: "whatsapp",
        direction: "inbound",
        contactId: created.body.id,
        conversationId: "cv-pgb",
        conversationAssigneeUserId: "owner",
        sentAt: "2026-01-10T10:00:00.000Z",
        preview: "through pgbouncer",
      }),
    );
    const interactions = await waitFor(async () => {
      const res = await call("GET", `/interactions?contactId=${created.body.id}`);
      return res.body?.data?.length ? res.body.data : undefined;
    });
    expect(interactions).toMatchObject([{ preview: "through pgbouncer" }]);

    const delivered = await waitFor(async () => {
      const ids = receiver.at("/pgb").map((r) => r.body?.data?.id);
      return ids.length >= 4 ? ids : undefined;
    }, 15_000);
    expect(delivered).toContain(created.body.id);
  });

  it("PostgreSQL sees only PgBouncer's connections for the stack's databases, one pool per service", async () => {
    const seen = await backends();
    const viaBouncer = new Set((await console_("servers")).map((s) => Number(s.remote_pid)));
    expect(seen.filter((b) => !viaBouncer.has(b.pid))).toEqual([]);
    // Every process, the gateway too, holds its outbox relay's session (which polls, and LISTENs while it
    // holds the relay lock), so each database is there.
    const processes = (SERVICES as string[]).concat("gateway");
    const databases = new Set(seen.map((b) => b.datname));
    for (const service of processes) expect(databases).toContain(names.database(service));
    // application_name passes through: each connection says which service holds it, and for what. A
    // server connection PgBouncer keeps for the next client was reset (DISCARD ALL): it has none.
    for (const b of seen) expect(["", b.datname, `${b.datname}:relay`]).toContain(b.applicationName);
    expect(seen.filter((b) => b.applicationName === `${b.datname}:relay`).length).toBe(processes.length);
  });

  it("DATABASE_IDLE_TIMEOUT_S: an idle process gives its request pool's connections back", async () => {
    const crm = names.database("crm");
    const pooled = async () =>
      (await console_("clients")).filter((c) => c.database === crm && c.application_name === crm).length;
    const busy = await Promise.all(Array.from({ length: 8 }, () => call("GET", "/contacts?limit=1")));
    expect(busy.every((r) => r.status === 200)).toBe(true);
    expect(await pooled()).toBeGreaterThan(0);
    // The relay's poll runs on its own pool: it does not keep the request pool's connections open.
    await waitFor(async () => ((await pooled()) === 0 ? true : undefined), (IDLE_S + 5) * 1000);
    expect((await call("GET", "/contacts?limit=1")).status).toBe(200);
  });
});
