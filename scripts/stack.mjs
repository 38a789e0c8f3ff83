// Starts the Funil processes (the built services, then the gateway) wired to each other through the
// environment (docs/operations.md §Configuration), and stops them again. Used by `npm start` and by the end-to-end tests.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { DEFAULT_URLS, isListening } from "./infra.mjs";

/** Backend services in start order; the gateway comes last, once they answer. */
export const SERVICES = ["crm", "scheduling", "timeline", "learning", "webhooks"];
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
const NAME_WIDTH = Math.max(...SERVICES.map((s) => s.length), "gateway".length);
const COLORS = [36, 33, 35, 32, 34, 31, 96];
const TAIL_LINES = 30;
const RESTART_BACKOFF_MS = [250, 500, 1000, 2000, 5000, 10_000];
const RESTART_RESET_MS = 30_000;
/**
 * Each process's heap budget: old space (NODE_MAX_OLD_SPACE_MB) and each of the young generation's two
 * semi-spaces (NODE_MAX_SEMI_SPACE_MB). V8 otherwise lets the heap grow far past what the process uses
 * before it collects. Small semi-spaces keep the RSS of most processes down; crm keeps 16 MB, because a
 * list page's rows and messages would outlive two scavenges at 8 MB and reach old space, costing CPU per
 * page for little RSS saved (bench/RESULTS.md). The flag sizes every V8 heap of the process, webhooks'
 * poster thread's too (a Worker's resourceLimits are ignored under it): at 8 MB webhooks delivers at the
 * same CPU per delivery as at 16 and holds ~30 MB less; at 4 it pays ~45 % more (bench/RESULTS-webhooks.md).
 */
const SEMI_SPACE_MB = { crm: 16 };
export const heapFlags = (env, name) => [
  `--max-old-space-size=${env.NODE_MAX_OLD_SPACE_MB || 96}`,
  `--max-semi-space-size=${env.NODE_MAX_SEMI_SPACE_MB || SEMI_SPACE_MB[name] || 8}`,
];

/** What may run in copies: the backend services and the gateway. */
const SCALABLE = [...SERVICES, "gateway"];
const MAX_COPIES = 16;

/**
 * Reads FUNIL_COPIES, e.g. `crm=3,timeline=2,gateway=2`, into `{ crm: 3, timeline: 2, gateway: 2 }`; an
 * unknown name or a count that is not a whole number from 1 to 16 is an error naming it.
 */
export function parseCopies(text) {
  const copies = {};
  for (const part of (text ?? "").split(",").map((p) => p.trim())) {
    if (part === "") continue;
    const [name, count, extra] = part.split("=").map((p) => p.trim());
    if (extra !== undefined || count === undefined)
      throw new Error(`FUNIL_COPIES: "${part}" is not name=count (e.g. crm=3,gateway=2)`);
    copies[name] = /^\d+$/.test(count) ? Number(count) : Number.NaN;
  }
  checkCopies(copies, "FUNIL_COPIES", 1);
  return copies;
}

function checkCopies(copies, what, min) {
  for (const [name, count] of Object.entries(copies ?? {})) {
    if (!SCALABLE.includes(name))
      throw new Error(`${what}: unknown name "${name}" (one of ${SCALABLE.join(", ")})`);
    if (!Number.isInteger(count) || count < min || count > MAX_COPIES)
      throw new Error(`${what}: ${name} needs a whole number of copies from ${min} to ${MAX_COPIES}`);
  }
}

/**
 * opts: { env = process.env, port = env.PORT ?? 8080 (0: a free one), adminToken = env.ADMIN_TOKEN ?? random,
 *         stdio: 'prefix' | 'inherit' | 'ignore' | <log file path> (default 'prefix'), root, log,
 *         restart = false, nodeArgs: (name) => extra node flags for that process (the benchmark's --cpu-prof),
 *         copies: { crm: 3, gateway: 2, … } (default 1 each), spareCopies: { crm: 1, … } (default 0) }
 * Resolves to { gatewayUrl, gatewayUrls, adminToken, env, exited, stop, pid, kill, stopOne, copies, stopCopy,
 * startCopy } once every gateway copy's /readyz answers 200.
 * `env` is the full environment the children got: `<NAME>_URL` lists every copy of a service, spares included
 * (a spare copy's address is reserved and listed, but nothing listens there until startCopy starts it);
 * `<NAME>_PORT` and `PORT` are the first copy's. Without `restart`, `exited` resolves with
 * { name, index, code, signal } when a child exits before stop() was called; with it, a child that dies is
 * started again on the same port after a backoff (RESTART_BACKOFF_MS, doubling up to the last value;
 * back to the first after a child ran RESTART_RESET_MS), and `exited` never resolves. A copy stopped with
 * stopCopy or stopOne is neither restarted nor reported.
 * pid(name, index = 0) is a running child's process id, kill(name, signal, index = 0) signals it (chaos
 * tests); stopOne(name) stops its running copies for good; copies(name) lists
 * [{ index, port, url, metricsUrl (a service's GET /metrics, on a free port of its own), pid, running }]; stopCopy(name, index, signal = 'SIGTERM') resolves with the exit
 * { code, signal } once that copy has exited; startCopy(name, index) resolves once it is ready (a service
 * listens, a gateway's /readyz answers 200).
 */
export async function startStack(opts = {}) {
  const base = opts.env ?? process.env;
  const root = opts.root ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const log = opts.log ?? ((msg) => process.stderr.write(`[stack] ${msg}\n`));
  const mainOf = (name) => path.join(root, "services", name, "dist", "main.js");
  if (!fs.existsSync(mainOf("gateway"))) {
    throw new Error(`${mainOf("gateway")} is missing: run npm run build`);
  }
  checkCopies(opts.copies, "copies", 1);
  checkCopies(opts.spareCopies, "spareCopies", 0);

  const adminToken = opts.adminToken ?? base.ADMIN_TOKEN ?? randomBytes(16).toString("hex");
  const slots = await portSlots(opts, base);
  const { env, envOf } = stackEnvironment(base, slots, adminToken);

  const output = openOutput(opts.stdio ?? "prefix");
  const children = [];
  let started = false;
  let stopping = false;
  let reportExit;
  const exited = new Promise((resolve) => {
    reportExit = resolve;
  });

  const stop = async () => {
    if (stopping) return;
    stopping = true;
    process.off("exit", killAll);
    // The gateway goes first so that no request reaches a service that is already gone.
    const gateway = children.filter((c) => c.name === "gateway");
    await terminate(gateway);
    await terminate(children.filter((c) => c.name !== "gateway"));
    output.close();
  };
  // Last resort when the parent exits without stop(): never leave services holding their ports.
  const killAll = () => {
    for (const c of children) if (c.exit.code === undefined) c.process.kill("SIGTERM");
  };
  process.on("exit", killAll);

  const failures = new Map();
  const labelOf = (name, index) => (index === 0 ? name : `${name}.${index}`);
  const launch = (name, index) => {
    const label = labelOf(name, index);
    const child = startChild(
      name,
      label,
      index,
      [...heapFlags(env, name), ...(opts.nodeArgs?.(name) ?? []), mainOf(name)],
      root,
      envOf(name, slots[name][index]),
      output,
    );
    const startedAt = Date.now();
    const previous = children.findIndex((c) => c.name === name && c.index === index);
    if (previous >= 0) children.splice(previous, 1, child);
    else children.push(child);
    child.exited.then(({ code, signal }) => {
      if (stopping || !started || child.stopped) return;
      const how = signal ?? `code ${code}`;
      if (!opts.restart) {
        log(`${label} exited unexpectedly (${how})${lastOutput(child)}`);
        reportExit({ name, index, code, signal });
        return;
      }
      // A crash loop slows down; a child that ran a while before dying starts again at once.
      const streak = Date.now() - startedAt >= RESTART_RESET_MS ? 0 : (failures.get(label) ?? 0);
      failures.set(label, streak + 1);
      const delay = RESTART_BACKOFF_MS[Math.min(streak, RESTART_BACKOFF_MS.length - 1)];
      log(
        `${label} exited unexpectedly (${how}); restarting it in ${delay} ms${streak ? "" : lastOutput(child)}`,
      );
      setTimeout(() => {
        if (!stopping && !child.stopped) launch(name, index);
      }, delay);
    });
    return child;
  };
  const running = (name, index = 0) =>
    children.find((c) => c.name === name && c.index === index && c.exit.code === undefined);
  const ready = (name, slot) =>
    name === "gateway"
      ? { what: `GET /readyz on port ${slot.port}`, check: () => readyz(slot.port) }
      : { what: `port ${slot.port}`, check: () => isListening("127.0.0.1", slot.port) };
  // The copies of one service start together; the next service once they all answer.
  const startAll = async (name) => {
    const launched = slots[name].filter((s) => !s.spare).map((slot) => [launch(name, slot.index), slot]);
    await Promise.all(
      launched.map(([child, slot]) => {
        const { what, check } = ready(name, slot);
        return waitReady(children, child, what, check);
      }),
    );
  };

  try {
    for (const name of SERVICES.filter((n) => fs.existsSync(mainOf(n)))) await startAll(name);
    await startAll("gateway");
    started = true;
  } catch (err) {
    await stop();
    throw err;
  }
  const slotOf = (name, index) => {
    const slot = slots[name]?.[index];
    if (!slot) throw new Error(`no copy ${index} of ${name} in this stack`);
    return slot;
  };
  return {
    gatewayUrl: `http://127.0.0.1:${slots.gateway[0].port}`,
    gatewayUrls: slots.gateway.filter((s) => !s.spare).map((s) => `http://127.0.0.1:${s.port}`),
    adminToken,
    env,
    exited,
    stop,
    pid: (name, index = 0) => running(name, index)?.process.pid,
    kill: (name, signal = "SIGKILL", index = 0) => running(name, index)?.process.kill(signal) ?? false,
    /** Stops a service's running copies for good (not restarted, not reported as exited): a benchmark that needs fewer. */
    stopOne: async (name) => {
      const copies = children.filter((c) => c.name === name && c.exit.code === undefined);
      for (const c of copies) c.stopped = true;
      await terminate(copies);
    },
    copies: (name) =>
      (slots[name] ?? []).map((slot) => {
        const child = running(name, slot.index);
        return {
          index: slot.index,
          port: slot.port,
          url: `http://127.0.0.1:${slot.port}`,
          ...(slot.metricsPort && { metricsUrl: `http://127.0.0.1:${slot.metricsPort}/metrics` }),
          pid: child?.process.pid,
          running: child !== undefined,
        };
      }),
    /** Signals one copy and resolves with its exit once it is gone; it stays stopped until startCopy. */
    stopCopy: async (name, index, signal = "SIGTERM") => {
      slotOf(name, index);
      const child = children.find((c) => c.name === name && c.index === index);
      if (!child) return { code: undefined, signal: undefined };
      child.stopped = true;
      if (child.exit.code === undefined) child.process.kill(signal);
      return child.exited;
    },
    /** Starts one copy (a stopped one, or a spare) on its own port; resolves once it is ready. */
    startCopy: async (name, index) => {
      const slot = slotOf(name, index);
      if (running(name, index)) throw new Error(`${labelOf(name, index)} is already running`);
      const child = launch(name, index);
      const { what, check } = ready(name, slot);
      await waitReady([child], child, what, check);
    },
  };
}

/**
 * Each copy's own ports, spares included: { crm: [{ index, port, metricsPort, spare }], gateway: [{ index,
 * port, authPort, spare }], … }. The first copy keeps the ports the caller asked for.
 */
async function portSlots(opts, base) {
  const taken = new Set();
  const portOf = async (value) => {
    if (!value || Number(value) === 0) return freePort(taken);
    // A port something already answers on would fool the readiness checks (another stack's gateway
    // answers /readyz): refuse it before starting anything.
    if (await isListening("127.0.0.1", Number(value)))
      throw new Error(`port ${value} is already in use (another npm start?): stop it, or set another PORT`);
    taken.add(Number(value));
    return Number(value);
  };
  const slots = {};
  for (const name of SCALABLE) {
    const key = name.toUpperCase();
    const count = (opts.copies?.[name] ?? 1) + (opts.spareCopies?.[name] ?? 0);
    slots[name] = [];
    for (let index = 0; index < count; index++) {
      const first = index === 0;
      if (name === "gateway") {
        const port = await portOf(first ? (opts.port ?? base.PORT ?? 8080) : 0);
        const authPort = await portOf(first ? base.AUTH_PORT : 0);
        slots[name].push({ index, port, authPort, spare: index >= (opts.copies?.[name] ?? 1) });
      } else {
        const port = await portOf(first ? base[`${key}_PORT`] : 0);
        // Each copy's own /metrics listener (METRICS_PORT), scraped copy by copy.
        const metricsPort = await portOf(0);
        slots[name].push({ index, port, metricsPort, spare: index >= (opts.copies?.[name] ?? 1) });
      }
    }
  }
  return slots;
}

/**
 * The environment every child gets (every copy's address of every service, one cursor key), and
 * envOf(name, slot): a copy's own, with the ports it listens on.
 */
function stackEnvironment(base, slots, adminToken) {
  const urlsOf = (ports) => ports.map((p) => `http://127.0.0.1:${p}`).join(",");
  const env = {
    ...base,
    DATABASE_URL: base.DATABASE_URL ?? DEFAULT_URLS.databaseUrl,
    REDIS_URL: base.REDIS_URL ?? DEFAULT_URLS.redisUrl,
    NATS_URL: base.NATS_URL ?? DEFAULT_URLS.natsUrl,
    LOG_LEVEL: base.LOG_LEVEL ?? "info",
    PORT: String(slots.gateway[0].port),
    ADMIN_TOKEN: adminToken,
    // One cursor key for every process of the stack: a cursor one copy signed is read by any other.
    CURSOR_KEYS: base.CURSOR_KEYS || randomBytes(32).toString("base64url"),
  };
  // Every service gets every address, so each one finds the others (webhooks calls the gateway's Auth).
  for (const name of SERVICES) {
    const key = name.toUpperCase();
    env[`${key}_PORT`] = String(slots[name][0].port);
    env[`${key}_URL`] = base[`${key}_URL`] ?? urlsOf(slots[name].map((s) => s.port));
  }
  env.AUTH_PORT = String(slots.gateway[0].authPort);
  env.AUTH_URL = base.AUTH_URL ?? urlsOf(slots.gateway.map((s) => s.authPort));
  // A copy's own ports: the variables it listens on.
  const envOf = (name, slot) =>
    name === "gateway"
      ? { ...env, PORT: String(slot.port), AUTH_PORT: String(slot.authPort) }
      : { ...env, [`${name.toUpperCase()}_PORT`]: String(slot.port), METRICS_PORT: String(slot.metricsPort) };
  return { env, envOf };
}

function startChild(name, label, index, args, cwd, env, output) {
  const child = spawn(process.execPath, args, {
    cwd,
    env,
    stdio: output.inherit ? ["ignore", "inherit", "inherit"] : ["ignore", "pipe", "pipe"],
  });
  const entry = { name, index, label, process: child, tail: [], exit: {} };
  child.on("error", (err) => entry.tail.push(String(err)));
  // "close" rather than "exit": by then the last lines of output have been read.
  entry.exited = new Promise((resolve) => {
    child.once("close", (code, signal) => {
      entry.exit = { code, signal };
      resolve(entry.exit);
    });
  });
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    readline.createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) => {
      entry.tail.push(line);
      if (entry.tail.length > TAIL_LINES) entry.tail.shift();
      output.write(label, line);
    });
  }
  return entry;
}

/**
 * Polls check() until it is true. Fails early, with the last output of the one that died, when any of
 * the children started so far exits: a service that falls over while the next one starts counts too.
 */
async function waitReady(children, child, what, check) {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const anyExit = Promise.race(children.map((c) => c.exited));
  const exited = () => children.find((c) => c.exit.code !== undefined);
  while (!exited()) {
    if (await check()) return;
    if (Date.now() > deadline) {
      throw new Error(`${child.label}: no ${what} within ${READY_TIMEOUT_MS / 1000} s${lastOutput(child)}`);
    }
    await Promise.race([sleep(100), anyExit]);
  }
  const dead = exited();
  const { code, signal } = dead.exit;
  throw new Error(`${dead.label} exited during start (${signal ?? `code ${code}`})${lastOutput(dead)}`);
}

async function readyz(port) {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

async function terminate(children) {
  const running = children.filter((c) => c.exit.code === undefined);
  for (const c of running) c.process.kill("SIGTERM");
  const all = Promise.all(running.map((c) => c.exited));
  if ((await Promise.race([all.then(() => true), sleep(STOP_TIMEOUT_MS)])) === true) return;
  for (const c of running) if (c.exit.code === undefined) c.process.kill("SIGKILL");
  await all;
}

/** Where the children's lines go: the parent's stdout (prefixed), a file (prefixed), nowhere, or inherited. */
function openOutput(stdio) {
  if (stdio === "inherit") return { inherit: true, write() {}, close() {} };
  if (stdio === "ignore") return { write() {}, close() {} };
  if (stdio === "prefix") {
    const color = process.stdout.isTTY;
    const colorOf = new Map();
    return {
      write(name, line) {
        if (!colorOf.has(name)) colorOf.set(name, COLORS[colorOf.size % COLORS.length]);
        const label = name.padEnd(NAME_WIDTH);
        const shown = color ? `\x1b[${colorOf.get(name)}m${label}\x1b[0m` : label;
        process.stdout.write(`${shown} | ${line}\n`);
      },
      close() {},
    };
  }
  const file = fs.createWriteStream(stdio, { flags: "a" });
  return {
    write: (name, line) => file.write(`${name.padEnd(NAME_WIDTH)} | ${line}\n`),
    close: () => file.end(),
  };
}

function lastOutput(child) {
  return child.tail.length ? `; last output:\n${child.tail.join("\n")}` : "";
}

/** A port that was free a moment ago (listen on 0, read it, close), never one handed out before. */
async function freePort(taken) {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const server = net.createServer();
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address();
        server.close(() => resolve(port));
      });
    });
    if (!taken.has(port)) {
      taken.add(port);
      return port;
    }
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
