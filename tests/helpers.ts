import { loadConfig, naming } from "@funil/config";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { inject } from "vitest";
import { gatewayConfig } from "../services/gateway/src/config.js";
import { SCOPES } from "../services/gateway/src/keys.js";
import { startGateway } from "../services/gateway/src/server.js";

export interface Response {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies freely
  body: any;
  headers: Headers;
}

export const ALL_SCOPES = [...SCOPES];

export const gatewayUrl = () => inject("gatewayUrl");

/** One HTTP call; the body is parsed when it is JSON. */
export async function request(
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] ??= "application/json";
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {}
  return { status: res.status, body: parsed, headers: res.headers };
}

export function admin(method: string, path: string, body?: unknown) {
  return request(method, `${gatewayUrl()}/admin/v1${path}`, body, {
    authorization: `Bearer ${inject("adminToken")}`,
  });
}

export interface Workspace {
  id: string;
  key: string;
  keyId: string;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  admin(method: string, path: string, body?: unknown): Promise<Response>;
}

/** A fresh workspace with a key (all scopes unless told otherwise), through the admin API. */
export async function newWorkspace(
  opts: { scopes?: string[]; operator?: boolean; name?: string } = {},
): Promise<Workspace> {
  const ws = await admin("POST", "/workspaces", {
    name: opts.name ?? "Test workspace",
    operator: opts.operator ?? false,
  });
  if (ws.status !== 201) throw new Error(`workspace: ${ws.status} ${JSON.stringify(ws.body)}`);
  const key = await admin("POST", `/workspaces/${ws.body.id}/keys`, {
    name: "test",
    scopes: opts.scopes ?? ALL_SCOPES,
  });
  if (key.status !== 201) throw new Error(`key: ${key.status} ${JSON.stringify(key.body)}`);
  return withKey(ws.body.id, key.body.secret, key.body.key.id);
}

export function withKey(workspaceId: string, key: string, keyId = ""): Workspace {
  return {
    id: workspaceId,
    key,
    keyId,
    call: (method, path, body, headers = {}) =>
      request(method, `${gatewayUrl()}/api/v1${path}`, body, { authorization: `Bearer ${key}`, ...headers }),
    admin,
  };
}

/** A second key of the same workspace with other scopes. */
export async function keyFor(ws: Workspace, scopes: string[]): Promise<Workspace> {
  const key = await admin("POST", `/workspaces/${ws.id}/keys`, { name: "scoped", scopes });
  return withKey(ws.id, key.body.secret, key.body.key.id);
}

export async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error("waitFor: timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Reads the domain events of the test stack from JetStream (its EVENTS
 * stream), starting a second ago, through an ordered consumer.
 */
export async function eventsSubscriber() {
  const nc = await connect({ servers: inject("natsUrl") });
  const js = jetstream(nc);
  const names = naming(inject("funilEnv"));
  const consumer = await js.consumers.get(names.stream("EVENTS"), {
    filter_subjects: names.subject("events.>"),
    deliver_policy: DeliverPolicy.StartTime,
    opt_start_time: new Date(Date.now() - 1000).toISOString(),
  });
  // biome-ignore lint/suspicious/noExplicitAny: envelopes are free JSON
  const seen: any[] = [];
  let notify = () => {};
  const messages = await consumer.consume();
  (async () => {
    for await (const m of messages) {
      seen.push(m.json());
      notify();
    }
  })().catch(() => {});
  return {
    // biome-ignore lint/suspicious/noExplicitAny: envelopes are free JSON
    async next(type: string, predicate: (e: any) => boolean = () => true, timeoutMs = 10_000): Promise<any> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const i = seen.findIndex((e) => e.type === type && predicate(e));
        if (i >= 0) return seen.splice(i, 1)[0];
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no ${type} event within ${timeoutMs} ms`);
        await new Promise<void>((r) => {
          notify = r;
          setTimeout(r, Math.min(left, 200));
        });
      }
    },
    /** Every event seen so far of a type, for "emitted nothing" assertions. */
    all: (type: string) => seen.filter((e) => e.type === type),
    /** Every event seen so far (and not taken by next()), in the stream's order. */
    inOrder: () => [...seen],
    async close() {
      messages.stop();
      await nc.close();
    },
  };
}

/**
 * Publishes to the test stack's INGEST stream as the inbox, telephony and
 * e-mail systems do (docs/api/interactions.md §Ingest), and reads what the timeline refused
 * (ingest.dead.<subject>).
 */
export async function ingestClient() {
  const nc = await connect({ servers: inject("natsUrl") });
  const js = jetstream(nc);
  const names = naming(inject("funilEnv"));
  return {
    publish: (subject: string, payload: unknown) =>
      js.publish(names.subject(subject), typeof payload === "string" ? payload : JSON.stringify(payload)),
    /** Dead letters published since `since` whose payload contains `marker`. */
    async deadLetters(marker: string, since: Date) {
      const consumer = await js.consumers.get(names.stream("INGEST"), {
        filter_subjects: names.subject("ingest.dead.>"),
        deliver_policy: DeliverPolicy.StartTime,
        opt_start_time: since.toISOString(),
      });
      // biome-ignore lint/suspicious/noExplicitAny: dead letters are free JSON
      const found: any[] = [];
      for (;;) {
        const m = await consumer.next({ expires: 1000 });
        if (!m) return found;
        const body = m.json<{ payload: string }>();
        if (body.payload.includes(marker)) found.push({ ...body, deadSubject: m.subject });
      }
    },
    close: () => nc.close(),
  };
}

/**
 * One more gateway on the test stack's databases and services, as ops would run a second copy, with
 * settings of its own (`env` wins: point a *_URL elsewhere to play an outage).
 */
export function gatewayCopy(env: Record<string, string> = {}) {
  return startGateway(
    loadConfig(gatewayConfig, {
      ...process.env,
      FUNIL_ENV: inject("funilEnv"),
      LOG_LEVEL: "silent",
      PORT: "0",
      AUTH_PORT: "0",
      HOST: "127.0.0.1",
      CRM_URL: inject("crmUrl"),
      SCHEDULING_URL: inject("schedulingUrl"),
      TIMELINE_URL: inject("timelineUrl"),
      WEBHOOKS_URL: inject("webhooksUrl"),
      LEARNING_URL: inject("learningUrl"),
      ...env,
    }),
  );
}
export type GatewayCopy = Awaited<ReturnType<typeof gatewayCopy>>;
