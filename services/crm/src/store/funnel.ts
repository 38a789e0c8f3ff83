import type { Sql } from "@funil/db";
import type { FunnelRange, FunnelRows, StageTally } from "../funnel.js";

interface TotalsRow {
  openCount: number;
  openValue: string;
  wonCount: number;
  wonValue: string;
  lostCount: number;
  lostValue: string;
  closedWonCount: number;
  closedWonValue: string;
  closedLostCount: number;
  closedLostValue: string;
}

/** The funnel's figures in two aggregate queries; the trash is left out of both. */
export function funnelStore(sql: Sql) {
  /** The range on a column of the deals (alias o); an absent bound is open. */
  function between(column: string, range: FunnelRange) {
    const c = [sql`true`];
    if (range.from) c.push(sql`o.${sql(column)} >= ${range.from}`);
    if (range.to) c.push(sql`o.${sql(column)} < ${range.to}`);
    return c.reduce((acc, x) => sql`${acc} and ${x}`);
  }

  return {
    async rows(workspaceId: string, pipelineId: string | undefined, range: FunnelRange): Promise<FunnelRows> {
      const pipeline = (alias: string) =>
        pipelineId ? sql`and ${sql(alias)}.pipeline_id = ${pipelineId}` : sql``;
      const created = between("created_at", range);
      const stages = sql<(Omit<StageTally, "valueCents"> & { valueCents: string })[]>`
        select s.id as stage_id, s.name, count(o.id)::int as count, coalesce(sum(o.value_cents), 0)::text as value_cents
        from stages s
        join pipelines p on p.id = s.pipeline_id
        left join opportunities o
          on o.workspace_id = s.workspace_id and o.pipeline_id = s.pipeline_id and o.stage_id = s.id
          and o.trashed_at is null and ${created}
        where s.workspace_id = ${workspaceId} ${pipeline("s")}
        group by s.id, s.name, s.position, p.created_at, p.id
        order by p.created_at, p.id, s.position`;
      const won = between("won_at", range);
      const lost = between("lost_at", range);
      const totals = sql<TotalsRow[]>`
        select
          count(*) filter (where status = 'open' and ${created})::int as open_count,
          coalesce(sum(value_cents) filter (where status = 'open' and ${created}), 0)::text as open_value,
          count(*) filter (where status = 'won' and ${created})::int as won_count,
          coalesce(sum(value_cents) filter (where status = 'won' and ${created}), 0)::text as won_value,
          count(*) filter (where status = 'lost' and ${created})::int as lost_count,
          coalesce(sum(value_cents) filter (where status = 'lost' and ${created}), 0)::text as lost_value,
          count(*) filter (where status = 'won' and ${won})::int as closed_won_count,
          coalesce(sum(value_cents) filter (where status = 'won' and ${won}), 0)::text as closed_won_value,
          count(*) filter (where status = 'lost' and ${lost})::int as closed_lost_count,
          coalesce(sum(value_cents) filter (where status = 'lost' and ${lost}), 0)::text as closed_lost_value
        from opportunities o
        where o.workspace_id = ${workspaceId} and o.trashed_at is null ${pipeline("o")}
          and ((${created}) or (status = 'won' and ${won}) or (status = 'lost' and ${lost}))`;
      const [stageRows, [t]] = await Promise.all([stages, totals]);
      const tally = (count: number, value: string) => ({ count, valueCents: Number(value) });
      return {
        stages: stageRows.map((r) => ({ ...r, valueCents: Number(r.valueCents) })),
        byStatus: {
          open: tally(t!.openCount, t!.openValue),
          won: tally(t!.wonCount, t!.wonValue),
          lost: tally(t!.lostCount, t!.lostValue),
        },
        closedInRange: {
          won: tally(t!.closedWonCount, t!.closedWonValue),
          lost: tally(t!.closedLostCount, t!.closedLostValue),
        },
      };
    },

    async pipelineExists(workspaceId: string, pipelineId: string) {
      const rows =
        await sql`select 1 from pipelines where workspace_id = ${workspaceId} and id = ${pipelineId}`;
      return rows.length === 1;
    },
  };
}
export type FunnelStore = ReturnType<typeof funnelStore>;
