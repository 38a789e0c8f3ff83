import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import type { PipelineService } from "@funil/contracts";
import { originOf } from "@funil/db";
import { listAnswer } from "@funil/rpc";
import { check, createPipelineBody } from "@funil/schemas";
import type { PipelineStore } from "../store/pipelines.js";
import { pipelineWire } from "./wire.js";

export function pipelineService(deps: {
  pipelines: PipelineStore;
  clock: Clock;
}): ServiceImpl<typeof PipelineService> {
  return {
    async createPipeline(req, ctx) {
      const body = check(
        createPipelineBody,
        { name: req.name, stages: req.stageNames.map((name) => ({ name })) },
        "body",
      );
      const row = await deps.pipelines.create(
        req.workspaceId,
        body.name.trim(),
        body.stages.map((s) => s.name.trim()),
        deps.clock.now(),
        originOf(ctx.requestHeader),
      );
      return { pipeline: pipelineWire.proto(row) };
    },

    async listPipelines(req) {
      return listAnswer(pipelineWire, await deps.pipelines.list(req.workspaceId), req.apiJson);
    },
  };
}
