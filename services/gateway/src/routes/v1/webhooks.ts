import { DeliverySchema, type Subscription, SubscriptionSchema, WebhookFieldsSchema } from "@funil/contracts";
import { messageOf, toApiJson } from "@funil/rpc";
import { createWebhookBody, idParam, limit, patchWebhookBody, z } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import {
  IDEMPOTENCY_NOTE,
  idempotencyErrors,
  idempotencyHeaders,
  withIdempotencyKey,
} from "../../idempotency.js";
import { writeOptions } from "../../origin.js";
import { errorResponses } from "../../schemas/common.js";
import { delivery, page, webhook, webhookCreated, webhookSecret } from "../../schemas/responses.js";
import type { RouteApp } from "../app.js";
import { sendWholeJsonList, wholeListQuery } from "./whole-list.js";

// The read scopes of the events are checked by the webhooks service, which asks for the key's current
// scopes itself (docs/api/conventions.md §Scopes per route; docs/api/webhooks.md §Scope revoked): one owner for the rule, over HTTP and gRPC alike.
const config = { scopes: ["webhooks.manage"] };
const errors = errorResponses(400, 401, 403, 404);
const tags = ["webhooks"];

const json = (s: Subscription | undefined) => toApiJson(SubscriptionSchema, s!);
// Read at each call: the clients exist once the app serves, not when routes are declared.
const api = (ctx: GatewayContext) => ctx.webhooks.webhooks;

export const webhookRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    subscriptionsOfWorkspace(app, ctx);
    oneSubscription(app, ctx);
    secretAndDeliveries(app, ctx);
  };

/** GET /webhooks and POST /webhooks. */
function subscriptionsOfWorkspace(app: RouteApp, ctx: GatewayContext) {
  app.get(
    "/webhooks",
    {
      config,
      schema: {
        operationId: "listWebhooks",
        tags,
        summary: "List webhook subscriptions",
        querystring: z.strictObject(wholeListQuery),
        response: { 200: page(webhook), ...errors },
      },
    },
    async (req, reply) => {
      const { workspaceId } = req.caller;
      const res = await api(ctx).listWebhooks({ workspaceId, apiJson: true });
      return sendWholeJsonList(reply, SubscriptionSchema, res, {
        list: "webhooks",
        workspaceId,
        ...req.query,
      });
    },
  );

  app.post(
    "/webhooks",
    {
      config,
      schema: {
        operationId: "createWebhook",
        tags,
        summary: "Subscribe a URL to events (needs the read scope of every event); the secret is shown once",
        description: `A replay under the same Idempotency-Key shows the same secret. ${IDEMPOTENCY_NOTE}`,
        headers: idempotencyHeaders,
        body: createWebhookBody,
        response: { 201: webhookCreated, ...errors, ...idempotencyErrors },
      },
    },
    async (req, reply) => {
      const res = await withIdempotencyKey(req, reply, (idempotencyKey, options) =>
        api(ctx).createWebhook(
          {
            workspaceId: req.caller.workspaceId,
            keyId: req.caller.keyId,
            fields: messageOf(WebhookFieldsSchema, req.body),
            idempotencyKey,
          },
          options,
        ),
      );
      return reply.code(201).send({ subscription: json(res.subscription), secret: res.secret });
    },
  );
}

/** GET, PATCH and DELETE /webhooks/{id}. */
function oneSubscription(app: RouteApp, ctx: GatewayContext) {
  app.get(
    "/webhooks/:id",
    {
      config,
      schema: {
        operationId: "getWebhook",
        tags,
        summary: "Read a webhook subscription",
        params: idParam,
        response: { 200: webhook, ...errors },
      },
    },
    async (req) =>
      json(
        (await api(ctx).getWebhook({ workspaceId: req.caller.workspaceId, id: req.params.id })).subscription,
      ),
  );

  app.patch(
    "/webhooks/:id",
    {
      config,
      schema: {
        operationId: "updateWebhook",
        tags,
        summary:
          "Change url, events, description; active: true reactivates (clears disabledReason, failingSince)",
        params: idParam,
        body: patchWebhookBody,
        response: { 200: webhook, ...errors },
      },
    },
    async (req) =>
      json(
        (
          await api(ctx).updateWebhook(
            {
              workspaceId: req.caller.workspaceId,
              keyId: req.caller.keyId,
              id: req.params.id,
              fields: messageOf(WebhookFieldsSchema, req.body),
            },
            writeOptions(req),
          )
        ).subscription,
      ),
  );

  app.delete(
    "/webhooks/:id",
    {
      config,
      schema: {
        operationId: "deleteWebhook",
        tags,
        summary: "Delete a webhook subscription and its deliveries",
        params: idParam,
        response: { 204: z.null().describe("deleted"), ...errors },
      },
    },
    async (req, reply) => {
      await api(ctx).deleteWebhook(
        { workspaceId: req.caller.workspaceId, id: req.params.id },
        writeOptions(req),
      );
      return reply.code(204).send(null);
    },
  );
}

/** A subscription's secret (POST /webhooks/{id}/rotate-secret) and its recent deliveries. */
function secretAndDeliveries(app: RouteApp, ctx: GatewayContext) {
  app.post(
    "/webhooks/:id/rotate-secret",
    {
      config,
      schema: {
        operationId: "rotateWebhookSecret",
        tags,
        summary: "A new signing secret; the old one keeps signing, as a second v1, for 24 h",
        params: idParam,
        response: { 200: webhookSecret, ...errors },
      },
    },
    async (req) => {
      const res = await api(ctx).rotateSecret(
        { workspaceId: req.caller.workspaceId, id: req.params.id },
        writeOptions(req),
      );
      return { secret: res.secret };
    },
  );

  app.get(
    "/webhooks/:id/deliveries",
    {
      config,
      schema: {
        operationId: "listWebhookDeliveries",
        tags,
        summary:
          "The 50 most recent deliveries of a subscription, newest first, `limit` of them at most (no cursor: nextCursor is always null)",
        params: idParam,
        // No cursor (this list does not page): a cursor is a 400, not ignored. `limit` keeps the rule of
        // every list (1..500) and only shortens the 50.
        querystring: z.strictObject({ limit: limit(50) }),
        response: { 200: page(delivery), ...errors },
      },
    },
    async (req) => {
      const res = await api(ctx).listDeliveries({ workspaceId: req.caller.workspaceId, id: req.params.id });
      const data = res.data.slice(0, req.query.limit).map((d) => toApiJson(DeliverySchema, d));
      return { data, nextCursor: null };
    },
  );
}
