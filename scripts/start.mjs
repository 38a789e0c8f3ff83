// `npm start`: installs and builds when needed, makes sure PostgreSQL, Redis and NATS answer (starting
// private ones under .data/ if not), then runs the whole stack in the foreground until Ctrl-C.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ensureInfra } from "./infra.mjs";
import { parseCopies, SERVICES, startStack } from "./stack.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const env = process.env;
const say = (msg) => console.log(`[funil] ${msg}`);

function npm(...args) {
  say(`npm ${args.join(" ")}`);
  const result = spawnSync("npm", args, { cwd: root, stdio: "inherit" });
  if (result.status !== 0) {
    console.error(`[funil] npm ${args.join(" ")} failed`);
    process.exit(1);
  }
}

function workspaceDirs() {
  return ["packages", "services"].flatMap((group) => {
    const dir = path.join(root, group);
    if (!fs.existsSync(dir)) return [];
    return fs
      .readdirSync(dir)
      .map((name) => path.join(dir, name))
      .filter((ws) => fs.existsSync(path.join(ws, "package.json")));
  });
}

if (!fs.existsSync(path.join(root, "node_modules"))) {
  npm(fs.existsSync(path.join(root, "package-lock.json")) ? "ci" : "install");
}
if (env.FUNIL_REBUILD === "1" || workspaceDirs().some((ws) => !fs.existsSync(path.join(ws, "dist")))) {
  npm("run", "build");
}

let stack;
try {
  // Checked before anything starts: a typo in FUNIL_COPIES is a clear error, not a stack of the wrong shape.
  const copies = parseCopies(env.FUNIL_COPIES);
  await ensureInfra({
    databaseUrl: env.DATABASE_URL || undefined,
    redisUrl: env.REDIS_URL || undefined,
    natsUrl: env.NATS_URL || undefined,
    log: say,
  });
  stack = await startStack({ stdio: "prefix", port: env.PORT || 8080, restart: true, copies });
} catch (err) {
  console.error(`[funil] ${err.message}`);
  process.exit(1);
}

// The admin CLI (services/gateway/src/cli.ts) finds this stack's gateway and token here, per FUNIL_ENV.
const stackFile = path.join(root, ".data", `stack${env.FUNIL_ENV ? `-${env.FUNIL_ENV}` : ""}.json`);
fs.mkdirSync(path.dirname(stackFile), { recursive: true });
fs.writeFileSync(
  stackFile,
  `${JSON.stringify({ gatewayUrl: stack.gatewayUrl, adminToken: stack.adminToken, pid: process.pid })}\n`,
  { mode: 0o600 },
);

let stopping = false;
async function shutdown(code) {
  if (stopping) return;
  stopping = true;
  say("stopping…");
  await stack.stop();
  // Only our own file: never the one of another stack that took it over since.
  const written = fs.existsSync(stackFile) ? JSON.parse(fs.readFileSync(stackFile, "utf8")) : {};
  if (written.pid === process.pid) fs.rmSync(stackFile, { force: true });
  process.exit(code);
}
process.on("SIGINT", () => shutdown(0));
process.on("SIGTERM", () => shutdown(0));
// `npm start` runs us under sh, which dies of a SIGTERM sent to npm without passing it on: a new parent
// means whoever started us is gone, so stop as if signalled.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && shutdown(0), 1000).unref();

const api = `${stack.gatewayUrl}/api/v1`;
const lines = [`API:  ${api}`, `Docs: ${stack.gatewayUrl}/docs`];
// Where each copy listens, when some run in several (FUNIL_COPIES).
if (env.FUNIL_COPIES) {
  for (const name of [...SERVICES, "gateway"]) {
    const urls = stack
      .copies(name)
      .filter((c) => c.running)
      .map((c) => c.url);
    if (urls.length > 0) lines.push(`${name.padEnd(10)} ${urls.join("  ")}`);
  }
}
if (!env.ADMIN_TOKEN) {
  // The seed CLI must reach this same stack, so the hint repeats what sets it apart from the default one.
  const extra = [
    env.FUNIL_ENV && `FUNIL_ENV=${env.FUNIL_ENV}`,
    stack.env.PORT !== "8080" && `PORT=${stack.env.PORT}`,
  ];
  const prefix = [`ADMIN_TOKEN=${stack.adminToken}`, ...extra.filter(Boolean)].join(" ");
  lines.push(
    `Admin token (generated): ${stack.adminToken}`,
    `Create a demo workspace and key: ${prefix} npm run seed`,
  );
}
console.log(["", ...lines.map((l) => `  ${l}`), "", "  Ctrl-C stops everything.", ""].join("\n"));
