import { inBatches, pageLimit, type Sql } from "@funil/db";

/** A line of the attempt log as the API shows it. */
export interface AttemptRecord {
  id: string;
  deliveryId: string;
  event: string;
  at: Date;
  succeeded: boolean;
  responseStatus: number | null;
  durationMs: number;
  responseBody: string | null;
  error: string | null;
}

export interface AttemptFilters {
  succeeded?: boolean | undefined;
  event?: string | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
}

/**
 * The attempt log's reads and its retention (docs/api/webhooks.md §Attempt
 * log). Its rows are written with each attempt's outcome (deliveries.ts).
 */
export function attemptStore(sql: Sql) {
  return {
    /**
     * The attempt log of a subscription, newest first (at desc, id desc),
     * `take` rows after the keyset position `after`, through
     * attempts_by_subscription whatever the filters. The usual page sizes
     * are written into the statement (pageLimit), whose generic plan is the
     * one made for its values (store/explain.test.ts); the service's
     * database plans every statement afresh by default (server.ts), so
     * that plan is kept only by a session that asks for cached plans. The statement, run when awaited.
     */
    list(subscriptionId: string, f: AttemptFilters, take: number, after: [Date, string] | undefined) {
      // status is the API's word for succeeded, for the page written from raw rows (packages/rpc row-pages.ts).
      return sql<AttemptRecord[]>`
        select id, delivery_id, event, at, succeeded,
          case when succeeded then 'succeeded' else 'failed' end as status,
          response_status, duration_ms, response_body, error
        from attempts
        where subscription_id = ${subscriptionId}
          ${f.succeeded === undefined ? sql`` : sql`and succeeded = ${f.succeeded}`}
          ${f.event === undefined ? sql`` : sql`and event = ${f.event}`}
          ${f.from === undefined ? sql`` : sql`and at >= ${f.from}`}
          ${f.to === undefined ? sql`` : sql`and at < ${f.to}`}
          ${after ? sql`and (at, id) < (${after[0]}, ${after[1]})` : sql``}
        order by at desc, id desc ${pageLimit(sql, take)}`;
    },

    /**
     * The attempt log's retention (docs/api/webhooks.md §Attempt log): rows
     * older than `before` go, `batch` at a time so no statement holds many
     * locks for long. Answers how many went.
     */
    async sweep(before: Date, batch = 10_000): Promise<number> {
      return inBatches(async (limit) => {
        const rows = await sql`
          delete from attempts where id = any(array(
            select id from attempts where at < ${before} limit ${limit}))`;
        return rows.count;
      }, batch);
    },
  };
}
export type AttemptStore = ReturnType<typeof attemptStore>;
