import postgres from "postgres";

/**
 * What the tests that start a stack of their own (chaos, scale, PgBouncer, tracing, copies) and the run's
 * global setup share: a clean slate of databases, and an environment that reaches no other stack.
 */
const SERVER = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** Drops every database of one FUNIL_ENV (`funil_<env>_*`), so a stack starts from a clean slate. */
export async function dropDatabases(funilEnv: string, serverUrl: string = SERVER): Promise<void> {
  const server = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    for (const {
      datname,
    } of await server`select datname from pg_database where datname like ${`funil\\_${funilEnv}\\_%`}`)
      await server.unsafe(`drop database if exists "${datname}" with (force)`);
  } finally {
    await server.end();
  }
}

/**
 * Holds one FUNIL_ENV for a whole test run: a PostgreSQL advisory lock on a connection kept until the
 * returned release. A second run on the same environment (a checkout's `npm test` beside CI's, say) would
 * drop the first run's databases under its stack, since every run starts from a clean slate: it stops at
 * once instead, naming FUNIL_TEST_ENV. The lock goes with the connection if the run dies.
 */
export async function claimTestEnv(
  funilEnv: string,
  serverUrl: string = SERVER,
): Promise<() => Promise<void>> {
  const holder = postgres(serverUrl, { max: 1, onnotice: () => {}, idle_timeout: 0, max_lifetime: 0 });
  const [row] = await holder<{ held: boolean }[]>`
    select pg_try_advisory_lock(hashtext(${`funil test run ${funilEnv}`})) as held`;
  if (!row?.held) {
    await holder.end();
    throw new Error(
      `another test run uses FUNIL_TEST_ENV=${funilEnv} on this PostgreSQL server and would lose its databases; ` +
        "give this one another name (FUNIL_TEST_ENV=mine npm test)",
    );
  }
  return () => holder.end();
}

/**
 * The environment of a stack: this process's with `settings` on top, less every service's port and
 * address (startStack picks free ones), so that it never reaches another stack's processes.
 */
export function stackEnv(settings: Record<string, string | undefined>): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env, ...settings };
  delete env.PORT;
  for (const name of Object.keys(env))
    if (/_(PORT|URL)$/.test(name) && !/^(DATABASE|REDIS|NATS)_URL$/.test(name)) delete env[name];
  return env;
}
