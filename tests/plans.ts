import postgres from "postgres";

/** EXPLAIN's rows as one text. */
const text = (rows: readonly object[]) => rows.map((r) => Object.values(r)[0]).join("\n");
/** A value as an SQL literal, for EXECUTE's arguments. */
const literal = (v: unknown) =>
  `'${(v instanceof Date ? v.toISOString() : Array.isArray(v) ? `{${v.join(",")}}` : String(v)).replace(/'/g, "''")}'`;

/**
 * The statement a store sends and its plan, for the tests that hold a list's plans (list-plans.test.ts):
 * `run` is given a connection to `databaseUrl` and sends its statements; the one matching `statement` is
 * explained, with the generic plan PostgreSQL keeps for it when `kept`, else the plan made for its values.
 */
export async function planOf<S>(
  databaseUrl: string,
  statement: RegExp,
  run: (sql: S) => Promise<unknown>,
  kept: boolean,
): Promise<{ query: string; plan: string }> {
  let sent: { query: string; params: unknown[] } | undefined;
  const probe = postgres(databaseUrl, {
    max: 1,
    onnotice: () => {},
    // The driver's own first statement (its array types) is not the one looked for.
    debug: (_c, query, params) => {
      if (statement.test(query)) sent = { query, params };
    },
  });
  try {
    await run(probe as unknown as S);
    if (!sent) throw new Error(`no statement matching ${statement} was sent`);
    const { query, params } = sent;
    if (!kept)
      return { query, plan: text(await probe.unsafe(`explain (costs off) ${query}`, params as never[])) };
    await probe.unsafe("set plan_cache_mode = force_generic_plan");
    await probe.unsafe(`prepare kept as ${query}`);
    const args = params.length ? `(${params.map(literal).join(", ")})` : "";
    return { query, plan: text(await probe.unsafe(`explain (costs off) execute kept${args}`)) };
  } finally {
    await probe.end({ timeout: 5 });
  }
}
