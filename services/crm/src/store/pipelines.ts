import { type EmitChange, keptRecords, newId, type Origin, type Sql, type TransactionSql } from "@funil/db";

export interface StageRecord {
  id: string;
  name: string;
  position: number;
}

export interface PipelineRecord {
  id: string;
  workspaceId: string;
  name: string;
  stages: StageRecord[];
  createdAt: Date;
}

/** Emits a domain event inside the transaction of the change (outbox). */
export type EmitPipelineEvent = EmitChange<"pipeline.created", PipelineRecord>;

export function pipelineStore(sql: Sql, emit: EmitPipelineEvent) {
  /** Pipelines kept in memory: a pipeline and its stages never change once created (there is no update). */
  const kept = keptRecords<PipelineRecord>({
    read: (workspaceId, ids) => sql<PipelineRecord[]>`
      select p.id, p.workspace_id, p.name, p.created_at,
        coalesce(
          json_agg(json_build_object('id', s.id, 'name', s.name, 'position', s.position) order by s.position)
            filter (where s.id is not null),
          '[]'
        ) as stages
      from pipelines p left join stages s on s.pipeline_id = p.id
      where p.workspace_id = ${workspaceId} and p.id = any(${ids as string[]})
      group by p.id`,
    refs: (workspaceId) => sql<{ id: string }[]>`
      select id from pipelines where workspace_id = ${workspaceId} order by created_at, id`,
  });
  return {
    /** Stages keep the order given: position 0, 1, 2… */
    async create(
      workspaceId: string,
      name: string,
      stageNames: string[],
      now: Date,
      by: Origin,
    ): Promise<PipelineRecord> {
      return sql.begin(async (tx) => {
        const id = newId("pl", now.getTime());
        await tx`insert into pipelines ${tx({ id, workspace_id: workspaceId, name, created_at: now })}`;
        const stages = stageNames.map((stageName, position) => ({
          id: newId("stg", now.getTime()),
          workspace_id: workspaceId,
          pipeline_id: id,
          name: stageName,
          position,
        }));
        await tx`insert into stages ${tx(stages)}`;
        const pipeline: PipelineRecord = {
          id,
          workspaceId,
          name,
          createdAt: now,
          stages: stages.map((s) => ({ id: s.id, name: s.name, position: s.position })),
        };
        await emit(tx, "pipeline.created", pipeline, by);
        return pipeline;
      });
    },

    /**
     * Pipelines in creation order, each with its stages in order. Only their ids are read each time (the
     * pipelines already in memory are the rows), once for the lists of the workspace asked in the same
     * turn; the others are read in one statement.
     */
    async list(workspaceId: string): Promise<PipelineRecord[]> {
      return kept.list(workspaceId);
    },

    /**
     * The stage a new deal lands in when none is given: the first stage of
     * the pipeline. Every stage is an open stage (won and lost are statuses).
     */
    async firstStage(
      tx: TransactionSql,
      workspaceId: string,
      pipelineId: string,
    ): Promise<string | undefined> {
      const [row] = await tx<{ id: string }[]>`
        select id from stages where workspace_id = ${workspaceId} and pipeline_id = ${pipelineId}
        order by position limit 1`;
      return row?.id;
    },

    async stageInPipeline(tx: TransactionSql, workspaceId: string, pipelineId: string, stageId: string) {
      const rows = await tx`
        select 1 from stages where workspace_id = ${workspaceId} and pipeline_id = ${pipelineId} and id = ${stageId}`;
      return rows.length === 1;
    },
  };
}
export type PipelineStore = ReturnType<typeof pipelineStore>;
