import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import { CreateMemberRequestSchema, type MemberService, UpdateMemberRequestSchema } from "@funil/contracts";
import { originOf } from "@funil/db";
import { notFound } from "@funil/errors";
import { listAnswer, plainOf } from "@funil/rpc";
import { check, createMemberBody, idParam, patchMemberBody } from "@funil/schemas";
import type { MemberStore } from "../store/members.js";
import { memberWire } from "./wire.js";

export function memberService(deps: {
  members: MemberStore;
  clock: Clock;
}): ServiceImpl<typeof MemberService> {
  return {
    async createMember(req, ctx) {
      const body = check(createMemberBody, plainOf(CreateMemberRequestSchema, req), "body");
      const row = await deps.members.create(
        req.workspaceId,
        { name: body.name.trim(), email: body.email, role: body.role.trim(), active: body.active ?? true },
        deps.clock.now(),
        originOf(ctx.requestHeader),
      );
      return { member: memberWire.proto(row) };
    },

    async updateMember(req, ctx) {
      const { id } = check(idParam, { id: req.id }, "path");
      const body = check(
        patchMemberBody,
        plainOf(UpdateMemberRequestSchema, req, ["workspaceId", "id"]),
        "body",
      );
      const row = await deps.members.update(
        req.workspaceId,
        id,
        { name: body.name?.trim(), role: body.role?.trim(), active: body.active },
        deps.clock.now(),
        originOf(ctx.requestHeader),
      );
      if (!row) throw notFound("member");
      return { member: memberWire.proto(row) };
    },

    async listMembers(req) {
      return listAnswer(memberWire, await deps.members.list(req.workspaceId), req.apiJson);
    },
  };
}
