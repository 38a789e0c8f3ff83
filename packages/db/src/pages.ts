import type postgres from "postgres";
import type { Sql } from "./client.js";

/**
 * The page sizes whose statements get a plan of their own: `limit + 1` (the
 * extra row tells whether a next page exists) for the limits clients ask
 * most, the default 50 first.
 */
const KEPT_TAKES = new Set([11, 21, 26, 51, 101, 201, 501]);

/**
 * `limit <take>` of a keyset page. With `limit $n` PostgreSQL planned the
 * statement at every call: its generic plan guesses a tenth of the table for
 * a LIMIT parameter and a custom plan knows n, so the custom plan always
 * looked cheaper and was made again (a page planned each time costs
 * PostgreSQL about half as much again as one whose plan is kept;
 * bench/RESULTS.md has the figures). The usual sizes are written into the
 * statement, so each is a statement of its own whose generic plan PostgreSQL
 * keeps after five calls; any other size stays a parameter, so that what a
 * client asks cannot multiply the statements a connection prepares. Only for
 * filters whose generic plan is the custom one (equalities and ranges on the
 * keyset indexes, checked in services/crm/src/store/explain.test.ts): a text
 * search or an array filter wants its values planned and passes
 * `planned = false`. A parameter does not promise a plan per call: PostgreSQL
 * keeps the generic plan after five calls whenever its estimate is no worse
 * than the custom plans' (scheduling's createdAfter did so and walked the
 * workspace), so a filter that must be planned for its values is also sent
 * unnamed (plannedPerCall) or runs on a database that plans every statement
 * (services/webhooks, customPlans).
 */
export function pageLimit(sql: Sql, take: number, planned = true): postgres.Fragment {
  return planned && KEPT_TAKES.has(take) ? sql.unsafe(`limit ${take}`) : sql`limit ${take}`;
}

/**
 * `query` sent as PostgreSQL's unnamed statement, which is planned for its values at each call: for a
 * filter whose kept plan would be wrong for some values (pageLimit). postgres.js reads a query's `prepare`
 * option when it sends it; its tagged templates take no options.
 */
export function plannedPerCall<Q extends object>(query: Q): Q {
  (query as { options?: { prepare?: boolean } }).options!.prepare = false;
  return query;
}
