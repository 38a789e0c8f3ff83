// Makes sure PostgreSQL, Redis and NATS answer at the URLs the stack is given. Where nothing answers on a
// local address, a private instance is started with its data under dataDir (.data/ by default). Those
// instances outlive this process on purpose: later runs (and a second stack beside this one) share them.
import { execFile, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const LOCAL_HOSTS = new Set(["127.0.0.1", "localhost", "::1"]);
const START_TIMEOUT_MS = 30_000;
// PATH may lack the sbin folders (nats-server lives in /usr/sbin on Debian).
const SEARCH_DIRS = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

export const DEFAULT_URLS = {
  databaseUrl: "postgres://postgres@127.0.0.1:5432/postgres",
  redisUrl: "redis://127.0.0.1:6379",
  natsUrl: "nats://127.0.0.1:4222",
};

/** Resolves true when a TCP connection to host:port succeeds within timeoutMs. */
export function isListening(host, port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port: Number(port) });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/**
 * Checks the three servers and starts private ones where needed. Returns, per server,
 * { host, port, started } where started tells whether this call started it.
 */
export async function ensureInfra({
  databaseUrl = DEFAULT_URLS.databaseUrl,
  redisUrl = DEFAULT_URLS.redisUrl,
  natsUrl = DEFAULT_URLS.natsUrl,
  dataDir = path.join(ROOT, ".data"),
  log = (msg) => console.log(msg),
} = {}) {
  const servers = [
    {
      name: "PostgreSQL",
      variable: "DATABASE_URL",
      url: databaseUrl,
      defaultPort: 5432,
      start: startPostgres,
    },
    { name: "Redis", variable: "REDIS_URL", url: redisUrl, defaultPort: 6379, start: startRedis },
    { name: "NATS", variable: "NATS_URL", url: natsUrl, defaultPort: 4222, start: startNats },
  ];
  const result = {};
  for (const server of servers) {
    const { host, port } = hostPort(server.url, server.defaultPort);
    const key = server.name.toLowerCase();
    if (await isListening(host, port)) {
      result[key] = { host, port, started: false };
      continue;
    }
    if (!LOCAL_HOSTS.has(host)) {
      throw new Error(
        `${server.name}: nothing answers at ${host}:${port} (${server.variable}=${server.url})`,
      );
    }
    const bind = host === "::1" ? "::1" : "127.0.0.1";
    log(`${server.name}: nothing answers on ${host}:${port}; starting a private instance in ${dataDir}`);
    try {
      await server.start({ bind, port, dataDir });
    } catch (err) {
      // Another run may have started the same instance meanwhile; then it is there to share.
      if (!(await isListening(host, port))) throw err;
    }
    await waitListening(server.name, host, port, logFileOf(key, dataDir));
    log(`${server.name}: started on ${host}:${port}`);
    result[key] = { host, port, started: true };
  }
  return result;
}

/** Stops the private instances that ensureInfra started in dataDir; returns the names of those stopped. */
export async function stopPrivateInfra(dataDir = path.join(ROOT, ".data")) {
  const stopped = [];
  const pgData = pgDataDir(dataDir);
  if (fs.existsSync(path.join(pgData, "postmaster.pid"))) {
    const pgCtl = path.join(postgresBinDir(), "pg_ctl");
    // The pid file outlives a crash: pg_ctl status tells whether a server really runs there.
    const running = await run(...asPostgres(pgCtl, ["status", "-D", pgData])).then(
      () => true,
      () => false,
    );
    if (running) {
      await runOrExplain(
        asPostgres(pgCtl, ["stop", "-D", pgData, "-m", "fast", "-w", "-t", "30"]),
        "pg_ctl stop",
      );
      stopped.push("postgresql");
    }
  }
  for (const [name, program] of [
    ["redis", "redis-server"],
    ["nats", "nats-server"],
  ]) {
    const pidFile = path.join(dataDir, name, `${name}.pid`);
    if (await killFromPidFile(pidFile, program)) stopped.push(name);
  }
  return stopped;
}

/**
 * The pgbouncer program. Where it is missing and this process may install packages (root on Debian), it
 * installs Debian's package (apt-get install pgbouncer) without starting its system service: a private
 * instance (startPgBouncer) is what the stack talks to.
 */
export async function ensurePgBouncer({ log = (msg) => console.log(msg) } = {}) {
  try {
    return findProgram("pgbouncer", "pgbouncer");
  } catch (err) {
    if (!isRoot() || !fs.existsSync("/usr/bin/apt-get")) throw err;
  }
  log("PgBouncer: not installed; installing Debian's package pgbouncer");
  // invoke-rc.d asks policy-rc.d whether the package may start its service: 101 says no.
  const policy = "/usr/sbin/policy-rc.d";
  const ownPolicy = !fs.existsSync(policy);
  if (ownPolicy) fs.writeFileSync(policy, "#!/bin/sh\nexit 101\n", { mode: 0o755 });
  const apt = (args) =>
    run("apt-get", args, { env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } }).then(
      () => "",
      (err) => [err.stdout, err.stderr].filter(Boolean).join("\n").trim() || err.message,
    );
  try {
    // The package lists may be missing or stale (a fresh container): refresh them once and retry.
    let failure = await apt(["install", "-y", "pgbouncer"]);
    if (failure) failure = (await apt(["update"])) || (await apt(["install", "-y", "pgbouncer"]));
    if (failure) throw new Error(`apt-get install pgbouncer failed: ${failure}`);
  } finally {
    if (ownPolicy) fs.rmSync(policy, { force: true });
  }
  return findProgram("pgbouncer", "pgbouncer");
}

/**
 * Starts a private PgBouncer in session mode on `port` (0: a free one) in front of the PostgreSQL server
 * of databaseUrl, with its ini in dir (a new temporary folder by default). Every database name passes
 * through to that server (a `*` entry), as its user, so services create and open their databases through
 * it as they would directly. poolSize bounds the server connections per database.
 * Resolves to { url, port, pid, stop } once it accepts connections; url is databaseUrl through it.
 */
export async function startPgBouncer({
  databaseUrl = DEFAULT_URLS.databaseUrl,
  port = 0,
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "funil-pgbouncer-")),
  poolSize = 20,
  log = (msg) => console.log(msg),
} = {}) {
  const program = await ensurePgBouncer({ log });
  const upstream = new URL(databaseUrl);
  const { host, port: upstreamPort } = hostPort(databaseUrl, 5432);
  const user = decodeURIComponent(upstream.username) || "postgres";
  const listenPort = port || (await freePort());
  const ini = path.join(dir, "pgbouncer.ini");
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(ini, pgBouncerIni({ host, port: upstreamPort, user, listenPort, poolSize }));
  // PgBouncer refuses to run as root: it drops to the postgres user, who must read the ini.
  if (isRoot()) await run("chown", ["-R", "postgres:postgres", dir]);
  const args = isRoot() ? ["-u", "postgres", ini] : [ini];
  const child = spawn(program, args, { stdio: ["ignore", "ignore", "pipe"] });
  const logFile = path.join(dir, "pgbouncer.log");
  const logStream = fs.createWriteStream(logFile);
  child.stderr.pipe(logStream);
  const exited = {};
  child.once("exit", (code, signal) => {
    exited.code = code ?? signal;
  });
  child.once("error", (err) => {
    exited.code = err.message;
  });
  try {
    await waitListening("PgBouncer", "127.0.0.1", listenPort, logFile, exited);
  } catch (err) {
    // One that neither answered nor exited is not left behind.
    if (exited.code === undefined) child.kill("SIGKILL");
    throw err;
  }
  upstream.hostname = "127.0.0.1";
  upstream.port = String(listenPort);
  return {
    url: upstream.toString(),
    port: listenPort,
    pid: child.pid,
    async stop() {
      if (exited.code === undefined) {
        const gone = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await gone;
      }
      logStream.end();
    },
  };
}

function pgBouncerIni({ host, port, user, listenPort, poolSize }) {
  return `[databases]
* = host=${host} port=${port} user=${user}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${listenPort}
unix_socket_dir =
; The forced user of the * entry logs in; PostgreSQL authenticates it as it would the services.
auth_type = any
; Session mode: the services keep named prepared statements on their connections.
pool_mode = session
default_pool_size = ${poolSize}
max_client_conn = 1000
server_reset_query = DISCARD ALL
`;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function hostPort(url, defaultPort) {
  const parsed = new URL(url);
  return {
    host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: Number(parsed.port || defaultPort),
  };
}

function logFileOf(key, dataDir) {
  const files = { postgresql: "pg/postgres.log", redis: "redis/redis.log", nats: "nats/nats.log" };
  return path.join(dataDir, files[key]);
}

async function waitListening(name, host, port, logFile, exited) {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (await isListening(host, port)) return;
    if (exited?.code !== undefined) break;
    await sleep(100);
  }
  const why =
    exited?.code !== undefined
      ? `exited (${exited.code})`
      : `did not answer within ${START_TIMEOUT_MS / 1000} s`;
  throw new Error(`${name} on ${host}:${port} ${why}. Last lines of ${logFile}:\n${tail(logFile)}`);
}

async function startPostgres({ bind, port, dataDir }) {
  const bin = postgresBinDir();
  fs.mkdirSync(dataDir, { recursive: true });
  const pgData = pgDataDir(dataDir);
  if (pgData !== path.join(dataDir, "pg"))
    console.error(`[infra] PostgreSQL data in ${pgData} (see pgDataDir)`);
  // Only the last folder is private: as root, the postgres user must still be able to reach it.
  fs.mkdirSync(pgData, { recursive: true, mode: 0o700 });
  // initdb and postgres refuse to run as root; the Debian package provides the postgres user for that.
  if (isRoot()) await run("chown", ["-R", "postgres:postgres", pgData]);
  if (!fs.existsSync(path.join(pgData, "PG_VERSION"))) {
    await runOrExplain(
      asPostgres(path.join(bin, "initdb"), [
        "-D",
        pgData,
        "-U",
        "postgres",
        "--auth=trust",
        "-E",
        "UTF8",
        "--no-locale",
      ]),
      "initdb",
    );
  }
  // pg_ctl passes -o through a shell, hence the quoting of the socket folder.
  const options = `-p ${port} -k '${pgData}' -c listen_addresses='${bind}'`;
  await runOrExplain(
    asPostgres(path.join(bin, "pg_ctl"), [
      "start",
      "-D",
      pgData,
      "-l",
      path.join(pgData, "postgres.log"),
      "-w",
      "-t",
      "30",
      "-o",
      options,
    ]),
    "pg_ctl start",
  );
}

async function startRedis({ bind, port, dataDir }) {
  const program = findProgram("redis-server", "redis-server");
  const dir = path.join(dataDir, "redis");
  fs.mkdirSync(dir, { recursive: true });
  const settings = {
    port,
    bind,
    daemonize: "yes",
    dir,
    save: "",
    appendonly: "no",
    logfile: path.join(dir, "redis.log"),
    pidfile: path.join(dir, "redis.pid"),
  };
  const args = Object.entries(settings).flatMap(([name, value]) => [`--${name}`, String(value)]);
  await runOrExplain([program, args], "redis-server");
}

async function startNats({ bind, port, dataDir }) {
  const program = findProgram("nats-server", "nats-server");
  const dir = path.join(dataDir, "nats");
  fs.mkdirSync(dir, { recursive: true });
  const logFile = path.join(dir, "nats.log");
  const args = [
    "-a",
    bind,
    "-p",
    String(port),
    "-js",
    "-sd",
    dir,
    "-l",
    logFile,
    "-P",
    path.join(dir, "nats.pid"),
  ];
  // Detached into its own session so that Ctrl-C on this terminal does not reach it.
  const child = spawn(program, args, { detached: true, stdio: "ignore" });
  const exited = {};
  child.once("exit", (code, signal) => {
    exited.code = code ?? signal;
  });
  child.once("error", (err) => {
    exited.code = err.message;
  });
  child.unref();
  await waitListening("NATS", bind, port, logFile, exited);
}

function postgresBinDir() {
  const base = "/usr/lib/postgresql";
  const versions = fs.existsSync(base)
    ? fs.readdirSync(base).filter((v) => fs.existsSync(path.join(base, v, "bin", "initdb")))
    : [];
  if (versions.length === 0) throw missing("PostgreSQL", `${base}/<version>/bin/initdb`, "postgresql");
  versions.sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
  return path.join(base, versions[0], "bin");
}

function findProgram(name, debianPackage) {
  const dirs = [...(process.env.PATH ?? "").split(path.delimiter).filter(Boolean), ...SEARCH_DIRS];
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {}
  }
  throw missing(name, name, debianPackage);
}

function missing(what, program, debianPackage) {
  return new Error(
    `${what} is not installed (no ${program} found). Install it with \`apt-get install ${debianPackage}\`, ` +
      "or point the URL variable at a running server.",
  );
}

/**
 * Where the private PostgreSQL keeps its data: <dataDir>/pg, unless we run as root and the postgres
 * user cannot reach that folder (a checkout under /root, or in a mode-700 temporary folder): then a
 * folder of the postgres user's own, named after dataDir so that stop finds it again.
 */
export function pgDataDir(dataDir) {
  const inside = path.join(dataDir, "pg");
  if (!isRoot() || spawnSync("runuser", ["-u", "postgres", "--", "test", "-x", dataDir]).status === 0)
    return inside;
  const home = fs.existsSync("/var/lib/postgresql") ? "/var/lib/postgresql" : os.tmpdir();
  const tag = createHash("sha256").update(path.resolve(dataDir)).digest("hex").slice(0, 12);
  return path.join(home, `funil-${tag}`);
}

function isRoot() {
  return process.getuid?.() === 0;
}

function asPostgres(program, args) {
  return isRoot() ? ["runuser", ["-u", "postgres", "--", program, ...args]] : [program, args];
}

async function runOrExplain([program, args], what) {
  try {
    await run(program, args);
  } catch (err) {
    const output = [err.stdout, err.stderr].filter(Boolean).join("\n").trim();
    throw new Error(`${what} failed: ${output || err.message}`);
  }
}

async function killFromPidFile(pidFile, program) {
  let pid;
  try {
    pid = Number(fs.readFileSync(pidFile, "utf8").trim());
  } catch {
    return false;
  }
  // A stale pid file may name an unrelated process by now: only signal the program we started.
  const alive = pid > 0 && readCmdline(pid).includes(program);
  if (alive) {
    process.kill(pid, "SIGTERM");
    const deadline = Date.now() + 10_000;
    while (readCmdline(pid).includes(program) && Date.now() < deadline) await sleep(100);
    if (readCmdline(pid).includes(program)) process.kill(pid, "SIGKILL");
  }
  fs.rmSync(pidFile, { force: true });
  return alive;
}

function readCmdline(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}

function tail(file, lines = 20) {
  try {
    return fs.readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
