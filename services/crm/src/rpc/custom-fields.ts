import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import {
  CreateCustomFieldRequestSchema,
  type CustomFieldService,
  ListCustomFieldsRequestSchema,
} from "@funil/contracts";
import { originOf } from "@funil/db";
import { invalid } from "@funil/errors";
import { listAnswer, plainOf } from "@funil/rpc";
import { check, createCustomFieldBody, listCustomFieldsQuery } from "@funil/schemas";
import { checkCustomFields } from "../custom-fields.js";
import type { CustomFieldStore } from "../store/custom-fields.js";
import { customFieldWire } from "./wire.js";

/**
 * customFields of a body against the workspace's definitions (docs/api/contacts.md §Contact): the
 * one field rule that needs data, so it runs here and not in the shared schemas.
 */
export function customFieldsGuard(store: CustomFieldStore) {
  return async (
    workspaceId: string,
    entity: "contact" | "opportunity",
    values: Record<string, unknown> | null | undefined,
  ) => {
    if (!values) return;
    const problems = checkCustomFields(values, await store.list(workspaceId, entity));
    if (problems.length > 0)
      throw invalid(
        problems.map((p) => ({ ...p, path: `body.${p.path}` })),
        "body",
      );
  };
}

export function customFieldService(deps: {
  customFields: CustomFieldStore;
  clock: Clock;
}): ServiceImpl<typeof CustomFieldService> {
  return {
    async createCustomField(req, ctx) {
      const body = check(createCustomFieldBody, plainOf(CreateCustomFieldRequestSchema, req), "body");
      const row = await deps.customFields.create(
        req.workspaceId,
        {
          entity: body.entity,
          fieldKey: body.fieldKey,
          label: body.label.trim(),
          type: body.type,
          options: body.type === "select" ? [...new Set(body.options)] : [],
        },
        deps.clock.now(),
        originOf(ctx.requestHeader),
      );
      return { customField: customFieldWire.proto(row) };
    },

    async listCustomFields(req) {
      const query = check(
        listCustomFieldsQuery,
        plainOf(ListCustomFieldsRequestSchema, req, ["workspaceId", "apiJson"]),
        "query",
      );
      return listAnswer(
        customFieldWire,
        await deps.customFields.list(req.workspaceId, query.entity),
        req.apiJson,
      );
    },
  };
}
