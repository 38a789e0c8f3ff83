import { DeliverySchema } from "@funil/contracts";
import { apiJsonCall, toApiJson } from "@funil/rpc";
import { deliveryParams, idParam, listAttemptsQuery, recoverBody, z } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { EVENT_CATALOG } from "../../events/catalog.js";
import { writeOptions } from "../../origin.js";
import { errorResponses } from "../../schemas/common.js";
import { delivery, eventType, page, webhookAttempt, webhookRecovered } from "../../schemas/responses.js";
import { sendJsonItems, sendPage } from "./json-page.js";
import { pageOf, wholeListQuery } from "./whole-list.js";

// As every webhooks route (webhooks.ts): webhooks.manage; the service checks the rest.
const config = { scopes: ["webhooks.manage"] };
const errors = errorResponses(400, 401, 403, 404);
// Resend and recover: 409 when the subscription is not active, or the delivery is pending already.
const resendErrors = errorResponses(400, 401, 403, 404, 409);
const tags = ["webhooks"];

/** Each event type of the catalog with its API JSON, written once: the catalog is fixed while the gateway runs. */
const CATALOG_JSON = EVENT_CATALOG.map((e) => ({ type: e.type, json: JSON.stringify(e) }));

/**
 * What a subscription's owner does with its deliveries (docs/api/webhooks.md): the event catalog,
 * resend, recover and the attempt log.
 */
export const webhookDeliveryRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    const api = () => ctx.webhooks.webhooks;

    app.get(
      "/webhooks/event-types",
      {
        config,
        schema: {
          operationId: "listWebhookEventTypes",
          tags,
          summary:
            "The event catalog: every subscribable event, when it is emitted, the read scope it needs and the JSON Schema of a delivery's body",
          // A short list like the others the gateway pages itself: limit 1..500 (one page by default).
          querystring: z.strictObject(wholeListQuery),
          response: { 200: page(eventType), ...errorResponses(400, 401, 403) },
        },
      },
      async (req, reply) => {
        const page = pageOf(CATALOG_JSON, {
          list: "event-types",
          workspaceId: req.caller.workspaceId,
          ...req.query,
          key: (e) => e.type,
        });
        return sendJsonItems(
          reply,
          page.data.map((e) => e.json),
          page.nextCursor,
        );
      },
    );

    app.post(
      "/webhooks/:id/deliveries/:deliveryId/resend",
      {
        config,
        schema: {
          operationId: "resendWebhookDelivery",
          tags,
          summary:
            "Send a delivery that is not pending again: a new series of attempts of the same event id and body, signed afresh (409 while it is pending or the subscription is not active)",
          params: deliveryParams,
          response: { 202: delivery, ...resendErrors },
        },
      },
      async (req, reply) => {
        const res = await api().resendDelivery(
          {
            workspaceId: req.caller.workspaceId,
            id: req.params.id,
            deliveryId: req.params.deliveryId,
          },
          writeOptions(req),
        );
        return reply.code(202).send(toApiJson(DeliverySchema, res.delivery!));
      },
    );

    app.post(
      "/webhooks/:id/recover",
      {
        config,
        schema: {
          operationId: "recoverWebhook",
          tags,
          summary:
            "Send again every dead delivery created within [since, until) (until: now), oldest first, 10 000 per call; pending ones are left as they are (409 when the subscription is not active)",
          params: idParam,
          body: recoverBody,
          response: { 202: webhookRecovered, ...resendErrors },
        },
      },
      async (req, reply) => {
        const res = await api().recoverDeliveries(
          {
            workspaceId: req.caller.workspaceId,
            id: req.params.id,
            since: req.body.since,
            until: req.body.until,
          },
          writeOptions(req),
        );
        return reply
          .code(202)
          .send({ queued: res.queued, notQueued: res.notQueued, nextSince: res.nextSince ?? null });
      },
    );

    app.get(
      "/webhooks/:id/attempts",
      {
        config,
        schema: {
          operationId: "listWebhookAttempts",
          tags,
          summary: "The attempt log of a subscription (keyset: at desc, id desc)",
          description:
            "Every attempt of every delivery, newest first, kept WEBHOOK_ATTEMPT_RETENTION_DAYS (30 by default): " +
            "when its POST went out, succeeded or failed, the receiver's status, how long it took, the first 1 KB " +
            "of the answer that came with the status, and the error when no answer came. from is inclusive, to exclusive.",
          params: idParam,
          querystring: listAttemptsQuery,
          response: { 200: page(webhookAttempt), ...errors },
        },
      },
      async (req, reply) =>
        sendPage(
          reply,
          await apiJsonCall(api().listAttempts, {
            workspaceId: req.caller.workspaceId,
            id: req.params.id,
            ...req.query,
          }),
        ),
    );
  };
