import postgres from "postgres";

export type Sql = postgres.Sql;
export type TransactionSql = postgres.TransactionSql;
export { postgres };

const UNIQUE_VIOLATION = "23505";
const FOREIGN_KEY_VIOLATION = "23503";
const DUPLICATE_DATABASE = "42P04";

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint_name?: string };
  return e?.code === UNIQUE_VIOLATION && (constraint === undefined || e.constraint_name === constraint);
}

export function isForeignKeyViolation(err: unknown): boolean {
  return (err as { code?: string })?.code === FOREIGN_KEY_VIOLATION;
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/**
 * Opens the service's own database on the server of `serverUrl`, creating it
 * when it does not exist yet (several processes may race to create it).
 *
 * `customPlans`: every statement is planned for its parameters and its
 * tables as they are now (plan_cache_mode = force_custom_plan), never by a
 * generic plan cached from earlier executions. For a table that grows fast
 * from (nearly) empty: a generic plan made while it held a few rows, or while
 * its statistics said so until autovacuum's next ANALYZE, reads it whole at
 * every execution.
 */
export async function openDatabase(
  serverUrl: string,
  database: string,
  opts: { max?: number; customPlans?: boolean } = {},
) {
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    const rows = await admin`select 1 from pg_database where datname = ${database}`;
    if (rows.length === 0) {
      try {
        await admin.unsafe(`create database "${database.replace(/"/g, '""')}"`);
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code !== DUPLICATE_DATABASE && code !== UNIQUE_VIOLATION) throw err;
      }
    }
  } finally {
    await admin.end({ timeout: 5 });
  }
  return postgres(withDatabase(serverUrl, database), {
    max: opts.max ?? 10,
    // Column names only: postgres.camel would also camel-case every key inside json and jsonb values,
    // and those keys are the client's (a customFields key plan_type came back as planType).
    transform: { column: { from: postgres.toCamel, to: postgres.fromCamel } },
    // Named prepared statements (postgres.js' default, kept on purpose): bench/ measured that without
    // them a single read costs PostgreSQL and crm about 100 µs more each.
    prepare: true,
    onnotice: () => {},
    connection: {
      application_name: database,
      ...(opts.customPlans ? { plan_cache_mode: "force_custom_plan" } : {}),
    },
  });
}
