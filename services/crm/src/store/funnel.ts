import { coalescedByKey, type Sql } from "@funil/db";
import type { FunnelRange, FunnelRows } from "../funnel.js";

interface GroupRow {
  stageId: string;
  status: "open" | "won" | "lost";
  count: number;
  valueCents: string;
}

/** Which funnel: a workspace's, of one pipeline or all, over a range of time. */
interface FunnelQuery {
  workspaceId: string;
  pipelineId: string | undefined;
  range: FunnelRange;
}

/**
 * The funnel's figures (docs/api/deals.md §GET /funnel): one aggregate over the deals created in
 * the range, grouped by stage and status (byStage, byStatus and total all come
 * from it), and one over the deals closed in the range. Each is a single scan
 * of an index (opportunities_funnel, opportunities_by_won/lost), never a loop
 * per stage. The trash is left out of both.
 */
export function funnelStore(sql: Sql) {
  /** The range on a column of the deals (alias o); an absent bound is open. */
  function between(column: string, range: FunnelRange) {
    const c = [sql`true`];
    if (range.from) c.push(sql`o.${sql(column)} >= ${range.from}`);
    if (range.to) c.push(sql`o.${sql(column)} < ${range.to}`);
    return c.reduce((acc, x) => sql`${acc} and ${x}`);
  }

  /** The figures of one funnel (FunnelQuery); the funnels asked the same in one turn share them (read only). */
  const figures = coalescedByKey(
    async ({ workspaceId, pipelineId, range }: FunnelQuery): Promise<FunnelRows> => {
      const inPipeline = (alias: string) =>
        pipelineId ? sql`and ${sql(alias)}.pipeline_id = ${pipelineId}` : sql``;
      const stages = sql<{ stageId: string; name: string }[]>`
        select s.id as stage_id, s.name
        from stages s join pipelines p on p.id = s.pipeline_id
        where s.workspace_id = ${workspaceId} ${inPipeline("s")}
        order by p.created_at, p.id, s.position`;
      const created = sql<GroupRow[]>`
        select o.stage_id, o.status, count(*)::int as count, sum(o.value_cents)::text as value_cents
        from opportunities o
        where o.workspace_id = ${workspaceId} and o.trashed_at is null ${inPipeline("o")}
          and ${between("created_at", range)}
        group by o.stage_id, o.status`;
      const closed = sql<{ status: "won" | "lost"; count: number; valueCents: string }[]>`
        select o.status, count(*)::int as count, sum(o.value_cents)::text as value_cents
        from opportunities o
        where o.workspace_id = ${workspaceId} and o.trashed_at is null ${inPipeline("o")}
          and ((o.status = 'won' and ${between("won_at", range)}) or (o.status = 'lost' and ${between("lost_at", range)}))
        group by o.status`;
      const [stageRows, groups, closedRows] = await Promise.all([stages, created, closed]);

      const zero = () => ({ count: 0, valueCents: 0 });
      const byStage = new Map(stageRows.map((s) => [s.stageId, { ...s, ...zero() }]));
      const byStatus = { open: zero(), won: zero(), lost: zero() };
      for (const g of groups) {
        const value = Number(g.valueCents);
        const stage = byStage.get(g.stageId);
        if (stage) {
          stage.count += g.count;
          stage.valueCents += value;
        }
        byStatus[g.status].count += g.count;
        byStatus[g.status].valueCents += value;
      }
      const closedInRange = { won: zero(), lost: zero() };
      for (const c of closedRows)
        closedInRange[c.status] = { count: c.count, valueCents: Number(c.valueCents) };
      return { stages: [...byStage.values()], byStatus, closedInRange };
    },
    ({ workspaceId, pipelineId, range }) =>
      `${workspaceId} ${pipelineId ?? ""} ${range.from?.getTime() ?? ""} ${range.to?.getTime() ?? ""}`,
  );

  return {
    rows: (workspaceId: string, pipelineId: string | undefined, range: FunnelRange) =>
      figures({ workspaceId, pipelineId, range }),

    async pipelineExists(workspaceId: string, pipelineId: string) {
      const rows =
        await sql`select 1 from pipelines where workspace_id = ${workspaceId} and id = ${pipelineId}`;
      return rows.length === 1;
    },
  };
}
export type FunnelStore = ReturnType<typeof funnelStore>;
