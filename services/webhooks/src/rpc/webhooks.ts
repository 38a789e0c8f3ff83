import { create, fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import type { Client, HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import {
  type Attempt,
  type AuthService,
  type CreateWebhookResponse,
  CreateWebhookResponseSchema,
  ListAttemptsRequestSchema,
  ListAttemptsResponseSchema,
  SubscriptionSchema,
  type WebhookFields,
  WebhookFieldsSchema,
  type WebhookService,
} from "@funil/contracts";
import { type FiltersOf, getById, originOf, type Sql } from "@funil/db";
import { fail, notFound } from "@funil/errors";
import {
  keyedCall,
  listAnswer,
  plainOf,
  type Remember,
  type RowList,
  replayOf,
  rowListPage,
  runOnce,
} from "@funil/rpc";
import {
  check,
  createWebhookBody,
  deliveryParams,
  idParam,
  instant,
  listAttemptsQuery,
  patchWebhookBody,
  RECOVER_LIMIT,
  recoverBody,
} from "@funil/schemas";
import type { SecretBox } from "../secrets.js";
import { newSecret } from "../secrets.js";
import type { AttemptRecord, AttemptStore } from "../store/attempts.js";
import type { DeliveryStore } from "../store/deliveries.js";
import type { Asker, ResendStore } from "../store/resend.js";
import type { SubscriptionStore } from "../store/subscriptions.js";
import { distinct, requireScopes, type SubscriptionChanges } from "../subscriptions.js";
import { checkTargetUrl, type TargetPolicy } from "../targets.js";
import { listAuditEntries } from "./audit.js";
import { type EventLogDeps, listEvents } from "./events.js";
import { attemptWire, deliveryWire, subscriptionWire } from "./wire.js";

export interface WebhookDeps extends EventLogDeps {
  /** The database of the stores, where Idempotency-Keys are claimed. */
  sql: Sql;
  subscriptions: SubscriptionStore;
  deliveries: DeliveryStore;
  resends: ResendStore;
  attempts: AttemptStore;
  auth: Pick<Client<typeof AuthService>, "getKey">;
  secrets: SecretBox;
  targets: TargetPolicy;
  clock: Clock;
}

const id = (value: string) => check(idParam, { id: value }, "path").id;

/** Who asks for a resend or a recover: the caller's workspace and origin, for its webhook.resent event. */
const askerOf = (req: { workspaceId: string }, ctx: HandlerContext): Asker => ({
  workspaceId: req.workspaceId,
  by: originOf(ctx.requestHeader),
});
/**
 * A created subscription remembered under its Idempotency-Key: the secret
 * sealed as the subscription keeps it, never in clear, and opened for a replay.
 */
function rememberCreated(box: SecretBox): Remember<CreateWebhookResponse> {
  return {
    encode: (r) => ({
      subscription: toJson(SubscriptionSchema, r.subscription!),
      secret: box.seal(r.secret),
    }),
    decode: (remembered) => {
      const { subscription, secret } = remembered as { subscription: JsonValue; secret: string };
      return create(CreateWebhookResponseSchema, {
        subscription: fromJson(SubscriptionSchema, subscription),
        secret: box.open(secret),
      });
    },
  };
}

type AttemptQuery = typeof listAttemptsQuery;

/** The attempt log of one subscription (docs/api/webhooks.md): its cursors are bound to it. */
function attemptList(
  subscriptionId: string,
  attempts: AttemptStore,
): RowList<AttemptQuery, FiltersOf<AttemptQuery>, AttemptRecord, Attempt> {
  const statement = (
    _workspaceId: string,
    bound: FiltersOf<AttemptQuery>,
    take: number,
    after: [Date, string] | undefined,
  ) =>
    attempts.list(
      subscriptionId,
      {
        succeeded: bound.status === undefined ? undefined : bound.status === "succeeded",
        event: bound.event,
        from: instant(bound.from),
        to: instant(bound.to),
      },
      take,
      after,
    );
  // Pages are written from the statement's raw rows (packages/rpc row-pages.ts); the object path stays for the rest.
  return {
    list: `attempts:${subscriptionId}`,
    query: listAttemptsQuery,
    defaultLimit: 100,
    sortKey: (a) => a.at,
    sortColumn: () => "at",
    response: ListAttemptsResponseSchema,
    statement,
    toMessage: (a) => attemptWire.proto(a),
  };
}

export function webhookService(deps: WebhookDeps): ServiceImpl<typeof WebhookService> {
  const { subscriptions, clock } = deps;
  const remembered = rememberCreated(deps.secrets);
  const fieldsOf = (fields: WebhookFields | undefined) =>
    plainOf(WebhookFieldsSchema, fields ?? create(WebhookFieldsSchema));
  const reply = (s: Parameters<typeof subscriptionWire.proto>[0]) => ({
    subscription: subscriptionWire.proto(s),
  });

  /**
   * The asking key must hold webhooks.manage and the read scope of every
   * event (docs/api/webhooks.md §Subscribable events), asked of the gateway's Auth now, uncached.
   */
  async function vouch(workspaceId: string, keyId: string, events: string[]) {
    const key = keyId ? await deps.auth.getKey({ keyId }) : undefined;
    if (!key?.active || key.workspaceId !== workspaceId)
      throw fail("unauthorized", "the key that asks is unknown or revoked");
    requireScopes(key.scopes, events);
  }

  async function found(workspaceId: string, id: string) {
    const sub = await subscriptions.get(workspaceId, id);
    if (!sub) throw notFound("webhook subscription");
    return sub;
  }

  /** Resend and recover send to an active subscription only (docs/api/webhooks.md §Resend and recover). */
  async function foundActive(workspaceId: string, id: string) {
    const sub = await found(workspaceId, id);
    if (!sub.active)
      throw fail(
        "conflict",
        `the subscription is not active (${sub.disabledReason ?? "deactivated"}): reactivate it first with PATCH {"active": true}`,
      );
    return sub;
  }

  return {
    async listWebhooks(req) {
      return listAnswer(subscriptionWire, await subscriptions.list(req.workspaceId), req.apiJson);
    },

    getWebhook: getById("webhook subscription", subscriptions.get, reply),

    async createWebhook(req, ctx) {
      const plain = fieldsOf(req.fields);
      const body = check(createWebhookBody, plain, "body");
      const call = keyedCall(deps.sql, req, "CreateWebhook", plain, clock.now(), remembered);
      const replay = await replayOf(ctx, call);
      if (replay) return replay;
      const events = distinct(body.events);
      // The gateway's Auth and the URL's DNS are asked before the key's transaction opens.
      await vouch(req.workspaceId, req.keyId, events);
      await checkTargetUrl(body.url, deps.targets);
      const secret = newSecret();
      const input = { keyId: req.keyId, url: body.url, events, description: body.description ?? null };
      return runOnce(ctx, call, async (tx) => {
        const sub = await subscriptions.create(
          req.workspaceId,
          input,
          deps.secrets.seal(secret),
          call.now,
          originOf(ctx.requestHeader),
          tx,
        );
        return create(CreateWebhookResponseSchema, { ...reply(sub), secret });
      });
    },

    async updateWebhook(req, ctx) {
      const { id } = check(idParam, { id: req.id }, "path");
      const body = check(patchWebhookBody, fieldsOf(req.fields), "body");
      const current = await found(req.workspaceId, id);
      const changes: SubscriptionChanges = { ...body };
      // New events, or a reactivation, are vouched for by the key that asks, which the subscription then
      // keeps: its scopes are the ones checked at every attempt.
      if (body.events !== undefined || body.active === true) {
        await vouch(req.workspaceId, req.keyId, body.events ?? current.events);
        changes.keyId = req.keyId;
      }
      if (body.url !== undefined) await checkTargetUrl(body.url, deps.targets);
      const sub = await subscriptions.update(
        req.workspaceId,
        id,
        changes,
        clock.now(),
        originOf(ctx.requestHeader),
      );
      if (!sub) throw notFound("webhook subscription");
      return reply(sub);
    },

    async deleteWebhook(req, ctx) {
      const { id } = check(idParam, { id: req.id }, "path");
      if (!(await subscriptions.remove(req.workspaceId, id, clock.now(), originOf(ctx.requestHeader))))
        throw notFound("webhook subscription");
      return {};
    },

    async rotateSecret(req, ctx) {
      const { id } = check(idParam, { id: req.id }, "path");
      const secret = newSecret();
      const by = originOf(ctx.requestHeader);
      if (!(await subscriptions.rotate(req.workspaceId, id, deps.secrets.seal(secret), clock.now(), by)))
        throw notFound("webhook subscription");
      return { secret };
    },

    async listDeliveries(req) {
      const { id } = check(idParam, { id: req.id }, "path");
      const sub = await found(req.workspaceId, id);
      const rows = await deps.deliveries.recent(sub.id);
      return { data: rows.map((d) => deliveryWire.proto(d)) };
    },

    async resendDelivery(req, ctx) {
      const { id, deliveryId } = check(deliveryParams, { id: req.id, deliveryId: req.deliveryId }, "path");
      const sub = await found(req.workspaceId, id);
      if (!(await deps.resends.one(sub.id, deliveryId))) throw notFound("webhook delivery");
      await foundActive(req.workspaceId, id);
      const delivery = await deps.resends.resend(sub.id, deliveryId, clock.now(), askerOf(req, ctx));
      if (delivery === undefined) throw notFound("webhook delivery");
      if (delivery === "pending")
        throw fail("conflict", "the delivery is pending: its next attempt is queued already");
      return { delivery: deliveryWire.proto(delivery) };
    },

    async listAttempts(req) {
      const query = check(
        listAttemptsQuery,
        plainOf(ListAttemptsRequestSchema, req, ["workspaceId", "id"]),
        "query",
      );
      const sub = await found(req.workspaceId, id(req.id));
      return rowListPage(attemptList(sub.id, deps.attempts), req.workspaceId, query);
    },

    async recoverDeliveries(req, ctx) {
      const body = check(recoverBody, { since: req.since, until: req.until }, "body");
      const sub = await foundActive(req.workspaceId, id(req.id));
      const now = clock.now();
      const until = body.until ? new Date(body.until) : now;
      const done = await deps.resends.recover(
        sub.id,
        new Date(body.since),
        until,
        now,
        RECOVER_LIMIT,
        askerOf(req, ctx),
      );
      return { queued: done.queued, notQueued: done.notQueued, nextSince: done.nextSince?.toISOString() };
    },

    listEvents: listEvents(deps),
    listAuditEntries: listAuditEntries(deps),
  };
}
