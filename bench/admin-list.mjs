// GET /admin/v1/workspaces through the gateway against its bare route (bench/webhooks-reads-bare.mjs), without
// bench:webhooks-reads' fill: 20 workspaces made through the admin API, every service but the gateway
// stopped, then bench/compare.mjs's closed loop (BENCH_CONNECTIONS, BENCH_RUNS, BENCH_SECONDS; BENCH_OPEN_LOOP=0
// to skip the open loop). About a minute: the quick way to try a gateway flag or preload on a route that only
// the gateway serves. Prints the ratio lines; writes no results file (bench:webhooks-reads has the dated row).
//
//   node bench/admin-list.mjs
//   BENCH_GATEWAY_ARGS="--import=./bench/old-space-growth.mjs"  node flags for the gateway only
//   BENCH_BARE_NODE_OPTIONS="--import=./bench/old-space-growth.mjs"  NODE_OPTIONS of the bare route's process
//   BENCH_PATH=/healthz        measure another gateway path (the answers are then not compared with the bare's)
//   BENCH_PROFILE=<dir>        the gateway and the bare route under node --cpu-prof (bench/profile.mjs reads them)
//   BENCH_LOG=<file>           the stack's output
import postgres from "postgres";
import { ensureInfra } from "../scripts/infra.mjs";
import { startStack } from "../scripts/stack.mjs";
import { checkEqual, compare, cpuProfiled, startBare } from "./compare.mjs";

const ENV = process.env.BENCH_ENV ?? "bench_adminlist";
const PATH = process.env.BENCH_PATH ?? "/admin/v1/workspaces";
const WORKSPACES = 20;
const env = { ...process.env, FUNIL_ENV: ENV, LOG_LEVEL: "warn", RATE_LIMIT_MAX: "100000000" };
for (const name of Object.keys(env))
  if (/_(PORT|URL)$/.test(name) && !/^(DATABASE|REDIS|NATS)_URL$/.test(name)) delete env[name];
delete env.PORT;
const serverUrl = env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const dbUrl = (database) => {
  const u = new URL(serverUrl);
  u.pathname = `/${database}`;
  return u.toString();
};

await ensureInfra({ databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL, natsUrl: env.NATS_URL });
const server = postgres(serverUrl, { max: 1, onnotice() {} });
const dropDatabases = async () => {
  for (const { datname } of await server`
    select datname from pg_database where datname like ${`funil\\_${ENV}\\_%`}`)
    await server.unsafe(`drop database if exists "${datname}" with (force)`);
};
await dropDatabases();

const gatewayArgs = (process.env.BENCH_GATEWAY_ARGS ?? "").split(" ").filter(Boolean);
const stack = await startStack({
  env,
  port: 0,
  stdio: process.env.BENCH_LOG ?? "ignore",
  nodeArgs: (name) => [...cpuProfiled(["gateway"])(name), ...(name === "gateway" ? gatewayArgs : [])],
});
let bare;
try {
  for (let i = 0; i < WORKSPACES; i++) {
    const res = await fetch(`${stack.gatewayUrl}/admin/v1/workspaces`, {
      method: "POST",
      headers: { authorization: `Bearer ${stack.adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ name: `bench workspace ${i}` }),
    });
    if (!res.ok) throw new Error(`POST /admin/v1/workspaces: ${res.status} ${await res.text()}`);
  }
  for (const name of ["crm", "scheduling", "timeline", "learning", "webhooks"]) await stack.stopOne(name);
  bare = await startBare("./webhooks-reads-bare.mjs", {
    BARE_WEBHOOKS_DB: dbUrl(`funil_${ENV}_webhooks`),
    BARE_GATEWAY_DB: dbUrl(`funil_${ENV}_gateway`),
    BARE_ADMIN_TOKEN: stack.adminToken,
    CURSOR_KEYS: env.CURSOR_KEYS,
    ...(process.env.BENCH_BARE_NODE_OPTIONS && { NODE_OPTIONS: process.env.BENCH_BARE_NODE_OPTIONS }),
  });
  if (PATH === "/admin/v1/workspaces")
    await checkEqual(`GET ${PATH}`, stack.gatewayUrl, bare.url, PATH, stack.adminToken);
  await compare({
    service: "gateway",
    name: `GET ${PATH}`,
    path: PATH,
    key: stack.adminToken,
    sides: {
      gateway: { url: stack.gatewayUrl, groups: () => ({ gateway: () => [stack.pid("gateway")] }) },
      bare: { url: bare.url, groups: () => ({ bare: () => [bare.pid] }) },
    },
    log: (line) => console.log(line),
  });
} finally {
  await bare?.stop();
  await stack.stop();
  await dropDatabases();
  await server.end();
}
