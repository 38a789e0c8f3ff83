import { randomBytes } from "node:crypto";
import { type MessageShape, create as message, toJson } from "@bufbuild/protobuf";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { naming } from "@funil/config";
import {
  AuthService,
  ListAttemptsResponseSchema,
  SubscriptionSchema,
  WebhookService,
} from "@funil/contracts";
import { type EventInput, migrate, openDatabase, type Sql, type TransactionSql, writeEvent } from "@funil/db";
import { describeError, encodedBytesOf, errorInterceptor, toApiJson } from "@funil/rpc";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { secretBox } from "../secrets.js";
import { migrations, resentEvents, subscriptionEvents } from "../server.js";
import { attemptStore } from "../store/attempts.js";
import { deliveryStore } from "../store/deliveries.js";
import { eventLogStore } from "../store/event-log.js";
import { resendStore } from "../store/resend.js";
import { subscriptionStore } from "../store/subscriptions.js";
import { routes } from "./routes.js";
import { type WebhookDeps, webhookService } from "./webhooks.js";
import { attemptWire } from "./wire.js";

/**
 * The webhooks handlers in-process on the real test database, with the
 * production URL policy (no http, no private targets), which the test stack
 * cannot use since its receivers listen on loopback. The gateway's Auth is
 * stood in for by a Connect router answering from a table of keys.
 */
const names = naming(`${process.env.FUNIL_TEST_ENV}_handlers`);
const key = randomBytes(32);
let sql: Sql;
let webhooks: ReturnType<typeof createClient<typeof WebhookService>>;
let deps: WebhookDeps;
const workspaceId = `ws_h${Date.now()}`;
const keys: Record<string, { active: boolean; workspaceId: string; scopes: string[]; operator: boolean }> = {
  key_all: { active: true, workspaceId, scopes: ["webhooks.manage", "contacts.read"], operator: false },
};

beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    names.database("webhooks"),
  );
  await migrate(sql, migrations);
  const auth = createClient(
    AuthService,
    createRouterTransport((router) =>
      router.service(AuthService, {
        getKey: (req) => keys[req.keyId] ?? { active: false, workspaceId: "", scopes: [], operator: false },
      }),
    ),
  );
  // A subscription's events go to the outbox, as the service's do.
  const emit = async (tx: TransactionSql, e: EventInput) => {
    await writeEvent(tx, (t) => names.subject(`events.${t}`), e);
  };
  const events = subscriptionEvents(emit);
  deps = {
    sql,
    subscriptions: subscriptionStore(sql, events),
    deliveries: deliveryStore(sql, (id) => names.subject(`webhook.deliveries.${id}`), events),
    resends: resendStore(sql, (id) => names.subject(`webhook.deliveries.${id}`), resentEvents(emit)),
    attempts: attemptStore(sql),
    events: eventLogStore(sql),
    loggedUpTo: async () => Number.MAX_SAFE_INTEGER,
    auth,
    secrets: secretBox(key),
    targets: { allowHttp: false, allowPrivate: false },
    clock: { now: () => new Date() },
  };
  const transport = createRouterTransport(routes(deps), {
    router: { interceptors: [errorInterceptor(pino({ level: "silent" }))] },
  });
  webhooks = createClient(WebhookService, transport);
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

const create = (url: string, events = ["contact.created"], keyId = "key_all") =>
  webhooks.createWebhook({ workspaceId, keyId, fields: { url, events } }).then(
    (r) => ({ ok: r }),
    (err) => ({ error: describeError(err) }),
  );

describe("webhooks handlers (docs/api/webhooks.md)", () => {
  it("docs/api/webhooks.md §Subscription: http:// is refused unless WEBHOOK_ALLOW_HTTP", async () => {
    const res = await create("http://example.com/hook");
    expect(res).toMatchObject({ error: { status: 400, code: "validation_failed" } });
    expect(JSON.stringify(res)).toContain("url must use https");
  });

  it.each([
    "https://127.0.0.1/hook",
    "https://10.0.0.8/hook",
    "https://169.254.169.254/latest/meta-data",
    "https://[::1]/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://[fd00:ec2::254]/hook",
    "https://localhost/hook",
  ])("docs/api/webhooks.md §Subscription: a private, loopback or metadata host is a 400: %s", async (url) => {
    const res = await create(url);
    expect(res).toMatchObject({
      error: { status: 400, code: "validation_failed", details: [{ path: "body.url" }] },
    });
  });

  it("docs/api/webhooks.md §Subscription: credentials in the URL are refused", async () => {
    expect(await create("https://user:pw@8.8.8.8/hook")).toMatchObject({ error: { status: 400 } });
  });

  it("docs/api/webhooks.md §POST /webhooks: with WEBHOOK_SECRET_KEY the secret is stored encrypted (AES-256-GCM), never in clear", async () => {
    const res = await create("https://8.8.8.8/hook");
    if (!("ok" in res)) throw new Error(JSON.stringify(res));
    const [row] = await sql<{ secret: string }[]>`
      select secret from subscriptions where id = ${res.ok.subscription!.id}`;
    expect(row!.secret).toMatch(/^enc:v1:/);
    expect(row!.secret).not.toContain(res.ok.secret.slice(6));
    expect(secretBox(key).open(row!.secret)).toBe(res.ok.secret);
  });

  it("docs/api/webhooks.md §Subscribable events over gRPC: the same missing_scope and validation_failed as over HTTP", async () => {
    expect(await create("https://8.8.8.8/hook", ["opportunity.won"])).toMatchObject({
      error: {
        status: 403,
        code: "missing_scope",
        details: [{ path: "scope", message: "opportunities.read" }],
      },
    });
    expect(await create("https://8.8.8.8/hook", ["contact.deleted"])).toMatchObject({
      error: { status: 400, code: "validation_failed", details: [{ path: "body.events.0" }] },
    });
    expect(await create("https://8.8.8.8/hook", ["contact.created"], "key_unknown")).toMatchObject({
      error: { status: 401, code: "unauthorized" },
    });
  });
});

describe("reads by id made at once (an RPC batch) share one statement", () => {
  it("docs/api/webhooks.md §Subscription: each read gets its own subscription; another workspace's id and an unknown id are not_found", async () => {
    const [one, two] = [await create("https://8.8.8.8/one"), await create("https://8.8.8.8/two")];
    const ids = [one, two].map((r) => ("ok" in r ? r.ok.subscription!.id : ""));
    // Started in one turn, as the calls of one batch are.
    const reads = await Promise.all(
      [
        [workspaceId, ids[0]],
        ["ws_other", ids[0]],
        [workspaceId, ids[1]],
        [workspaceId, "wh_unknown"],
        [workspaceId, ids[0]],
      ].map(([ws, id]) =>
        webhooks.getWebhook({ workspaceId: ws!, id: id! }).then(
          (r) => r.subscription!.url,
          (err) => describeError(err).code,
        ),
      ),
    );
    expect(reads).toEqual([
      "https://8.8.8.8/one",
      "not_found",
      "https://8.8.8.8/two",
      "not_found",
      "https://8.8.8.8/one",
    ]);
  });
});

describe("subscriptions kept in memory at their version (keptRecords)", () => {
  it("docs/api/webhooks.md §GET /webhooks: a subscription changed through another copy, or by the circuit breaker, is listed as it is now", async () => {
    const made = await create("https://8.8.8.8/kept");
    if (!("ok" in made)) throw new Error(JSON.stringify(made));
    const id = made.ok.subscription!.id;
    // Another copy of the service: the same database, a memory of its own.
    const other = subscriptionStore(sql, async () => {});
    const listed = async () => (await other.list(workspaceId)).find((s) => s.id === id)!;
    expect(await listed()).toMatchObject({ url: "https://8.8.8.8/kept", active: true, version: 0 });
    await webhooks.updateWebhook({ workspaceId, keyId: "key_all", id, fields: { description: "changed" } });
    expect(await listed()).toMatchObject({ description: "changed", version: 1 });
    // Any update of the row raises its version (a trigger), whichever code made it: here the breaker's.
    await sql`update subscriptions set active = false, disabled_reason = 'circuit_breaker' where id = ${id}`;
    expect(await listed()).toMatchObject({ active: false, disabledReason: "circuit_breaker", version: 2 });
    // An update that changes nothing (a failed attempt of a subscription already failing) leaves it.
    await sql`update subscriptions set failing_since = failing_since, updated_at = updated_at where id = ${id}`;
    expect(await listed()).toMatchObject({ version: 2 });
    const json = await webhooks.listWebhooks({ workspaceId, apiJson: true });
    const messages = await webhooks.listWebhooks({ workspaceId });
    expect(json.ids).toEqual(messages.data.map((s) => s.id));
    expect(json.itemsJson.map((j) => JSON.parse(j))).toEqual(
      messages.data.map((s) => toApiJson(SubscriptionSchema, s)),
    );
  });
});

describe("attempt pages written from raw rows (packages/rpc row-pages.ts)", () => {
  it("GET /webhooks/{id}/attempts: each page is the object path's page, written as bytes", async () => {
    const res = await create("https://8.8.8.8/attempts");
    if (!("ok" in res)) throw new Error(JSON.stringify(res));
    const sub = res.ok.subscription!.id;
    for (let i = 0; i < 5; i++)
      await sql`insert into attempts ${sql({
        id: `att_raw_${i}`,
        deliveryId: `dlv_${i}`,
        subscriptionId: sub,
        workspaceId,
        event: "contact.created",
        at: new Date(Date.UTC(2026, 10, 25, 10, 0, i, i * 7)),
        succeeded: i % 2 === 0,
        responseStatus: i === 1 ? null : 200 + i,
        durationMs: i,
        responseBody: i % 2 ? null : `{"ok": "olá \\ 🙂"}`,
        error: i === 1 ? "timeout" : null,
      })}`;
    const impl = webhookService(deps);
    const pageOf = async (cursor?: string) => {
      const page = await impl.listAttempts({ workspaceId, id: sub, limit: 2, cursor } as never, {} as never);
      expect(encodedBytesOf(page)).toBeDefined();
      return page as MessageShape<typeof ListAttemptsResponseSchema>;
    };
    const pages = [await pageOf()];
    while (pages.at(-1)!.nextCursor) pages.push(await pageOf(pages.at(-1)!.nextCursor));
    expect(pages).toHaveLength(3);
    const objects = await deps.attempts.list(sub, {}, 10, undefined);
    const schema = ListAttemptsResponseSchema;
    expect(toJson(schema, message(schema, { data: pages.flatMap((p) => p.data) }))).toEqual(
      toJson(schema, message(schema, { data: objects.map((a) => attemptWire.proto(a)) })),
    );
  });
});
