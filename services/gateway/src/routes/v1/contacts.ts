import { type Contact, ContactFieldsSchema, ContactSchema } from "@funil/contracts";
import { apiJsonCall, messageOf, toApiJson } from "@funil/rpc";
import { idParam, listContactsQuery, patchContactBody, upsertContactBody } from "@funil/schemas";
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
import { contact, contactDetail, contactErasure, page } from "../../schemas/responses.js";
import { touchesJson } from "../../touches.js";
import type { RouteApp } from "../app.js";
import { sendPage } from "./json-page.js";

const read = { scopes: ["contacts.read"] };
const write = { scopes: ["contacts.write"] };
const errors = errorResponses(400, 401, 403, 404, 409);
// A write naming an owner who is not a member of the workspace is 422 invalid_reference.
const writeErrors = errorResponses(400, 401, 403, 404, 409, 422);

const json = (res: { contact?: Contact }) => toApiJson(ContactSchema, res.contact!);

/** The services that erase their copies of a contact when contact.erased reaches them. */
const ERASED_ASYNCHRONOUSLY = ["timeline", "scheduling", "webhooks"] as const;

export const contactRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    contactReads(app, ctx);
    contactWrites(app, ctx);
    contactErase(app, ctx);
  };

/** GET /contacts and GET /contacts/{id}. */
function contactReads(app: RouteApp, ctx: GatewayContext) {
  app.get(
    "/contacts",
    {
      config: read,
      schema: {
        operationId: "listContacts",
        tags: ["contacts"],
        summary: "List contacts",
        querystring: listContactsQuery,
        response: { 200: page(contact), ...errors },
      },
    },
    async (req, reply) =>
      sendPage(
        reply,
        await apiJsonCall(ctx.crm.contacts.listContacts, {
          workspaceId: req.caller.workspaceId,
          ...req.query,
        }),
      ),
  );

  app.get(
    "/contacts/:id",
    {
      config: read,
      schema: {
        operationId: "getContact",
        tags: ["contacts"],
        summary: "Read one contact, with its first and last human touch",
        params: idParam,
        response: { 200: contactDetail, ...errors },
      },
    },
    async (req) => {
      const input = { workspaceId: req.caller.workspaceId };
      // Both services at once; if the timeline is away the read is a 503, never invented nulls.
      const [res, summary] = await Promise.all([
        ctx.crm.contacts.getContact({ ...input, id: req.params.id }),
        ctx.timeline.summaries.getContactSummary({ ...input, contactId: req.params.id }),
      ]);
      // Added to the contact's own fresh object: spreading both into a third cost more than the lookup.
      return Object.assign(json(res), touchesJson(summary.touches));
    },
  );
}

/** POST /contacts (upsert) and PATCH /contacts/{id}; archive and unarchive under an Idempotency-Key. */
function contactWrites(app: RouteApp, ctx: GatewayContext) {
  app.post(
    "/contacts",
    {
      config: write,
      schema: {
        operationId: "upsertContact",
        tags: ["contacts"],
        summary: "Create or update a contact (upsert by phone, then e-mail)",
        description: IDEMPOTENCY_NOTE,
        headers: idempotencyHeaders,
        body: upsertContactBody,
        response: { 200: contact, 201: contact, ...writeErrors },
      },
    },
    async (req, reply) => {
      const res = await withIdempotencyKey(req, reply, (idempotencyKey, options) =>
        ctx.crm.contacts.upsertContact(
          {
            workspaceId: req.caller.workspaceId,
            fields: messageOf(ContactFieldsSchema, req.body),
            idempotencyKey,
          },
          options,
        ),
      );
      return reply.code(res.created ? 201 : 200).send(json(res));
    },
  );

  app.patch(
    "/contacts/:id",
    {
      config: write,
      schema: {
        operationId: "updateContact",
        tags: ["contacts"],
        summary: "Partial update: absent = untouched, null = cleared",
        params: idParam,
        body: patchContactBody,
        response: { 200: contact, ...writeErrors },
      },
    },
    async (req) =>
      json(
        await ctx.crm.contacts.updateContact(
          {
            workspaceId: req.caller.workspaceId,
            id: req.params.id,
            fields: messageOf(ContactFieldsSchema, req.body),
          },
          writeOptions(req),
        ),
      ),
  );

  for (const action of ["archive", "unarchive"] as const) {
    app.post(
      `/contacts/:id/${action}`,
      {
        config: write,
        schema: {
          operationId: `${action}Contact`,
          tags: ["contacts"],
          summary:
            action === "archive" ? "Archive a contact (soft, reversible)" : "Bring an archived contact back",
          description: IDEMPOTENCY_NOTE,
          params: idParam,
          headers: idempotencyHeaders,
          response: { 200: contact, ...errors, ...idempotencyErrors },
        },
      },
      async (req, reply) =>
        json(
          await withIdempotencyKey<{ contact?: Contact }>(req, reply, (idempotencyKey, options) => {
            const input = { workspaceId: req.caller.workspaceId, id: req.params.id, idempotencyKey };
            return action === "archive"
              ? ctx.crm.contacts.archiveContact(input, options)
              : ctx.crm.contacts.unarchiveContact(input, options);
          }),
        ),
    );
  }
}

/** POST /contacts/{id}/erase (docs/api/contacts.md §POST /contacts/{id}/erase). */
function contactErase(app: RouteApp, ctx: GatewayContext) {
  app.post(
    "/contacts/:id/erase",
    {
      config: write,
      schema: {
        operationId: "eraseContact",
        tags: ["contacts"],
        summary: "Erase a contact's personal data everywhere (LGPD, GDPR); not reversible",
        description:
          "crm erases at once (the contact becomes a tombstone: 404 to every read; its notes go, its " +
          "tasks lose their body, its deals stay for the funnel) and emits contact.erased; the timeline, " +
          "scheduling and webhooks erase their copies when it reaches them. An erased contact is 404, a " +
          `second erase included. ${IDEMPOTENCY_NOTE}`,
        params: idParam,
        headers: idempotencyHeaders,
        response: { 200: contactErasure, ...errors, ...idempotencyErrors },
      },
    },
    async (req, reply) => {
      const res = await withIdempotencyKey(req, reply, (idempotencyKey, options) =>
        ctx.crm.contacts.eraseContact(
          { workspaceId: req.caller.workspaceId, id: req.params.id, idempotencyKey },
          options,
        ),
      );
      return {
        id: res.id,
        erasedAt: res.erasedAt,
        crm: {
          notesDeleted: res.notesDeleted,
          tasksCleared: res.tasksCleared,
          opportunitiesKept: res.opportunitiesKept,
        },
        asynchronous: [...ERASED_ASYNCHRONOUSLY],
      };
    },
  );
}
