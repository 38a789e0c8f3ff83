import type { ServiceImpl } from "@connectrpc/connect";
import { type FunnelService, GetFunnelRequestSchema } from "@funil/contracts";
import { invalid, invalidReference } from "@funil/errors";
import { plainOf } from "@funil/rpc";
import { check, funnelQuery, instant } from "@funil/schemas";
import { checkRange, summarize } from "../funnel.js";
import type { FunnelStore } from "../store/funnel.js";
import { funnelToProto } from "./wire.js";

export function funnelService(deps: { funnel: FunnelStore }): ServiceImpl<typeof FunnelService> {
  return {
    async getFunnel(req) {
      const query = check(funnelQuery, plainOf(GetFunnelRequestSchema, req), "query");
      const range = { from: instant(query.from), to: instant(query.to) };
      const rangeProblems = checkRange(range);
      if (rangeProblems.length > 0)
        throw invalid(
          rangeProblems.map((p) => ({ ...p, path: `query.${p.path}` })),
          "query",
        );
      if (
        query.pipelineId !== undefined &&
        !(await deps.funnel.pipelineExists(req.workspaceId, query.pipelineId))
      )
        throw invalidReference([
          { path: "pipelineId", message: `no pipeline ${query.pipelineId} in this workspace` },
        ]);
      const rows = await deps.funnel.rows(req.workspaceId, query.pipelineId, range);
      return { funnel: funnelToProto(summarize(range, query.pipelineId, rows)) };
    },
  };
}
