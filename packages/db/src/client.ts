import { parseTimestamptz } from "@funil/schemas";
import postgres from "postgres";
import { traced } from "./tracing.js";
import { markingTransactions } from "./transactions.js";

export type Sql = postgres.Sql;
export type TransactionSql = postgres.TransactionSql;
export { postgres };

const UNIQUE_VIOLATION = "23505";
const FOREIGN_KEY_VIOLATION = "23503";
const DUPLICATE_DATABASE = "42P04";
/** pg_type's oid of timestamptz. */
const TIMESTAMPTZ = 1184;

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint_name?: string };
  return e?.code === UNIQUE_VIOLATION && (constraint === undefined || e.constraint_name === constraint);
}

export function isForeignKeyViolation(err: unknown): boolean {
  return (err as { code?: string })?.code === FOREIGN_KEY_VIOLATION;
}

/** A name as a quoted SQL identifier. */
const identifier = (name: string) => `"${name.replace(/"/g, '""')}"`;

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** How a process's pool to its database behaves. */
export interface PoolOptions {
  /** Connections the pool may hold at once (DATABASE_POOL_MAX); a LISTEN on it adds one of its own. */
  max?: number;
  /** Seconds a connection may sit idle before it is closed (DATABASE_IDLE_TIMEOUT_S; 0: never). */
  idleTimeoutS?: number;
  /** What pg_stat_activity shows as application_name (default: the database's name). */
  applicationName?: string;
}

/** The pool size and idle release when the caller gives none: the configuration's defaults. */
const POOL_DEFAULTS = { max: 3, idleTimeoutS: 30 } as const;

/**
 * Opens the service's own database on the server of `serverUrl`, creating it
 * when it does not exist yet (several processes may race to create it), and
 * returns its pool (openPool).
 *
 * `customPlans`: every statement is planned for its parameters and its
 * tables as they are now (plan_cache_mode = force_custom_plan), never by a
 * generic plan cached from earlier executions. For a table that grows fast
 * from (nearly) empty: a generic plan made while it held a few rows, or while
 * its statistics said so until autovacuum's next ANALYZE, reads it whole at
 * every execution. It is the database's own default (ALTER DATABASE … SET),
 * not a startup parameter: PgBouncer refuses startup parameters it does not
 * know, and every session of the database gets it, whichever pool opened it.
 */
export async function openDatabase(
  serverUrl: string,
  database: string,
  opts: PoolOptions & { customPlans?: boolean } = {},
) {
  await prepareDatabase(serverUrl, database, opts.customPlans ?? false);
  return openPool(serverUrl, database, opts);
}

/**
 * A pool on an existing database. Connections are a budget shared by every
 * process on the server: the pool opens them on demand up to `max`, closes
 * one that sat idle `idleTimeoutS` seconds, and replaces each after 30-60
 * minutes (postgres.js' max_lifetime, spread so that a pool's connections do
 * not all reconnect at once). postgres.js hands a query the connection that
 * has been idle the longest, so work that runs every few seconds keeps up to
 * idleTimeoutS / period connections open: such work gets a pool of its own.
 */
export function openPool(serverUrl: string, database: string, opts: PoolOptions = {}): Sql {
  // Traced, each statement run inside a sampled span gets a span of its own (tracing.ts); checked, each
  // transaction is marked so that no call leaves the process inside it (transactions.ts).
  return checkedAndTraced(
    postgres(withDatabase(serverUrl, database), {
      max: opts.max ?? POOL_DEFAULTS.max,
      // postgres.js reads 0 as "never".
      idle_timeout: opts.idleTimeoutS ?? POOL_DEFAULTS.idleTimeoutS,
      // Column names only: postgres.camel would also camel-case every key inside json and jsonb values,
      // and those keys are the client's (a customFields key plan_type came back as planType).
      transform: { column: { from: postgres.toCamel, to: postgres.fromCamel } },
      // timestamptz read by its parts where `new Date` misreads it (years 1-99, offsets with seconds).
      types: { timestamptz: { to: TIMESTAMPTZ, from: [TIMESTAMPTZ], parse: parseTimestamptz } } as never,
      // Named prepared statements (postgres.js' default, kept on purpose): without them every read is
      // parsed and planned again, on PostgreSQL and in crm (bench/RESULTS.md). A connection closed when idle
      // takes its statements with it; the next one prepares them again at first use.
      prepare: true,
      onnotice: () => {},
      connection: { application_name: opts.applicationName ?? database },
    }),
  );
}

const checkedAndTraced = (sql: Sql) => traced(markingTransactions(sql));

/**
 * Creates `database` unless it exists, and makes custom plans its default when asked, through one
 * connection to the server's default database.
 */
async function prepareDatabase(serverUrl: string, database: string, customPlans: boolean): Promise<void> {
  const admin = postgres(serverUrl, {
    max: 1,
    onnotice: () => {},
    connection: { application_name: `${database}:setup` },
  });
  try {
    const rows = await admin`select 1 from pg_database where datname = ${database}`;
    if (rows.length === 0) {
      try {
        await admin.unsafe(`create database ${identifier(database)}`);
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code !== DUPLICATE_DATABASE && code !== UNIQUE_VIOLATION) throw err;
      }
    }
    if (customPlans) await planAfresh(admin, database);
  } finally {
    await admin.end({ timeout: 5 });
  }
}

/** Makes force_custom_plan `database`'s default, unless it already is. */
async function planAfresh(admin: Sql, database: string): Promise<void> {
  const isSet = async () =>
    (
      await admin`
        select 1 from pg_db_role_setting s join pg_database d on d.oid = s.setdatabase
        where d.datname = ${database} and s.setrole = 0
          and 'plan_cache_mode=force_custom_plan' = any(s.setconfig)`
    ).length > 0;
  if (await isSet()) return;
  try {
    await admin.unsafe(`alter database ${identifier(database)} set plan_cache_mode = force_custom_plan`);
  } catch (err) {
    // Copies starting together update the same catalog row ("tuple concurrently updated"): the one that
    // lost finds the setting made by the other.
    if (!(await isSet())) throw err;
  }
}
