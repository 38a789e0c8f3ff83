import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import type { CustomFieldService, MemberService } from "@funil/contracts";
import { invalid, notFound } from "@funil/rpc";
import type { FieldType } from "../custom-fields.js";
import type { CustomFieldRecord, CustomFieldStore } from "../store/custom-fields.js";
import type { MemberRecord, MemberStore } from "../store/members.js";

const FIELD_TYPES = ["text", "number", "boolean", "date", "select"];
const ENTITIES = ["contact", "opportunity"];

const fieldToProto = (r: CustomFieldRecord) => ({ ...r, createdAt: r.createdAt.toISOString() });
const memberToProto = (r: MemberRecord) => ({ ...r, createdAt: r.createdAt.toISOString() });

export function customFieldService(deps: {
  customFields: CustomFieldStore;
  clock: Clock;
}): ServiceImpl<typeof CustomFieldService> {
  return {
    async createCustomField(req) {
      if (!ENTITIES.includes(req.entity)) throw invalid("entity is contact or opportunity");
      if (!FIELD_TYPES.includes(req.type)) throw invalid(`type is one of ${FIELD_TYPES.join(", ")}`);
      if (!/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(req.fieldKey))
        throw invalid("fieldKey: a letter then letters, digits or _ (at most 64)");
      if (req.type === "select" && req.options.length === 0) throw invalid("a select field needs options");
      const row = await deps.customFields.create(
        req.workspaceId,
        {
          entity: req.entity as "contact" | "opportunity",
          fieldKey: req.fieldKey,
          label: req.label || req.fieldKey,
          type: req.type as FieldType,
          options: req.type === "select" ? [...new Set(req.options)] : [],
        },
        deps.clock.now(),
      );
      return { customField: fieldToProto(row) };
    },
    async listCustomFields(req) {
      if (req.entity !== undefined && !ENTITIES.includes(req.entity))
        throw invalid("entity is contact or opportunity");
      return { data: (await deps.customFields.list(req.workspaceId, req.entity)).map(fieldToProto) };
    },
  };
}

export function memberService(deps: {
  members: MemberStore;
  clock: Clock;
}): ServiceImpl<typeof MemberService> {
  return {
    async createMember(req) {
      if (!req.name.trim() || !req.role.trim() || !/^[^\s@]+@[^\s@]+$/.test(req.email))
        throw invalid("name, a valid email and role are required");
      const row = await deps.members.create(
        req.workspaceId,
        { name: req.name, email: req.email, role: req.role, active: req.active ?? true },
        deps.clock.now(),
      );
      return { member: memberToProto(row) };
    },
    async updateMember(req) {
      const row = await deps.members.update(
        req.workspaceId,
        req.id,
        { name: req.name, role: req.role, active: req.active },
        deps.clock.now(),
      );
      if (!row) throw notFound("member");
      return { member: memberToProto(row) };
    },
    async listMembers(req) {
      return { data: (await deps.members.list(req.workspaceId)).map(memberToProto) };
    },
  };
}
