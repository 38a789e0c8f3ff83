import { CreateNoteRequestSchema, NoteSchema } from "@funil/contracts";
import { messageOf, toApiJson } from "@funil/rpc";
import { createNoteBody } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import {
  IDEMPOTENCY_NOTE,
  idempotencyErrors,
  idempotencyHeaders,
  withIdempotencyKey,
} from "../../idempotency.js";
import { errorResponses } from "../../schemas/common.js";
import { note } from "../../schemas/responses.js";

const errors = errorResponses(400, 401, 403, 422);

export const noteRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.post(
      "/notes",
      {
        config: { scopes: ["contacts.write", "opportunities.write"] },
        schema: {
          operationId: "createNote",
          tags: ["notes"],
          summary: "Add a note by a member on a contact (and optionally one of its deals)",
          description: IDEMPOTENCY_NOTE,
          headers: idempotencyHeaders,
          body: createNoteBody,
          response: { 201: note, ...errors, ...idempotencyErrors },
        },
      },
      async (req, reply) => {
        const res = await withIdempotencyKey(req, reply, (idempotencyKey, options) =>
          ctx.crm.notes.createNote(
            {
              ...messageOf(CreateNoteRequestSchema, req.body),
              workspaceId: req.caller.workspaceId,
              idempotencyKey,
            },
            options,
          ),
        );
        return reply.code(201).send(toApiJson(NoteSchema, res.note!));
      },
    );
  };
