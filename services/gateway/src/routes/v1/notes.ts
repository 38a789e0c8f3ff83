import { NoteSchema } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { z } from "zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { createNoteBody, note } from "../../schemas/notes.js";

const errors = errorResponses(400, 401, 403, 422);

export const noteRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.post(
      "/notes",
      {
        config: { scopes: ["contacts.write", "opportunities.write"] },
        schema: {
          tags: ["notes"],
          summary: "Add a note by a member on a contact (and optionally one of its deals)",
          body: createNoteBody,
          response: { 201: note, ...errors },
        },
      },
      async (req, reply) => {
        const res = await ctx.crm.notes.createNote({
          workspaceId: req.caller.workspaceId,
          contactId: req.body.contactId,
          opportunityId: req.body.opportunityId ?? undefined,
          body: req.body.body,
          userId: req.body.userId,
        });
        return reply.code(201).send(toApiJson(NoteSchema, res.note!) as z.infer<typeof note>);
      },
    );
  };
