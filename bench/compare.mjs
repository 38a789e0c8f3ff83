// The paired protocol every service's bench uses for its read routes: the gateway and that service's bare
// route (a plain one-process route, checked to answer the same body first) driven one after the other on the
// same data, at each connection count, runs alternating which side goes first so the machine's drift falls
// on both; then an open-loop run at half the bare route's top rate, 32 connections, for the p99s. Medians.
// With BENCH_SUMMARY=<file> each route's row is appended to it as one JSON line, for bench/all.mjs' table.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { appendFileSync } from "node:fs";
import { basename } from "node:path";
import { createInterface } from "node:readline";
import { isDeepStrictEqual } from "node:util";
import { measure, median } from "./load.mjs";

const numberOf = (name, fallback) => Number(process.env[name] || fallback);
/** BENCH_QUICK=1: short runs for iterating on one change; the numbers are noisier. */
const QUICK = process.env.BENCH_QUICK === "1";
export const protocol = {
  connections: (process.env.BENCH_CONNECTIONS || "8,32").split(",").map(Number),
  runs: numberOf("BENCH_RUNS", QUICK ? 1 : 3),
  seconds: numberOf("BENCH_SECONDS", QUICK ? 2 : 5),
  openLoop: process.env.BENCH_OPEN_LOOP !== "0" && !QUICK,
};

/**
 * The node flags of a stack's processes for BENCH_PROFILE=<dir>: those `names` run under `node --cpu-prof`,
 * each writing its profile into <dir>/<name> (bench/profile.mjs reads them); none without the variable.
 */
export const cpuProfiled =
  (names, dir = process.env.BENCH_PROFILE) =>
  (name) =>
    dir && names.includes(name) ? ["--cpu-prof", `--cpu-prof-dir=${dir}/${name}`] : [];

async function answer(base, path, key) {
  const res = await fetch(base + path, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: await res.json() };
}

/**
 * Starts a bench's bare route, or another server of a bench (`file`, next to this one), as its own process
 * with `env` added, so /proc shows its CPU; resolves to { pid, url, stop } once it prints the port it listens
 * on. stop() waits for its exit. Under BENCH_PROFILE=<dir> it runs under `node --cpu-prof` too, into <dir>/<file's name>.
 */
export async function startBare(file, env) {
  const name = basename(file, ".mjs");
  const child = spawn(
    process.execPath,
    [...cpuProfiled([name])(name), new URL(file, import.meta.url).pathname],
    {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const [port] = await Promise.race([
    once(createInterface({ input: child.stdout }), "line"),
    once(child, "exit").then(([code]) => Promise.reject(new Error(`${file} exited: ${code}`))),
  ]);
  return {
    pid: child.pid,
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      await once(child, "exit");
    },
  };
}

/** Throws unless both answer 200 with the same body: else the comparison means nothing. */
export async function checkEqual(name, gatewayUrl, bareUrl, path, key) {
  const [g, b] = [await answer(gatewayUrl, path, key), await answer(bareUrl, path, key)];
  if (g.status === 200 && isDeepStrictEqual(g, b)) return;
  const [gs, bs] = [g, b].map((a) => JSON.stringify(a));
  let at = 0;
  while (at < gs.length && gs[at] === bs[at]) at++;
  const near = (text) => text.slice(Math.max(0, at - 150), at + 150);
  throw new Error(
    `${name}: the bare route answers differently, from character ${at}\ngateway: …${near(gs)}…\nbare:    …${near(bs)}…`,
  );
}

/**
 * One route through both sides. `sides` = { gateway: { url, groups }, bare: { url, groups } }, groups
 * mapping process names to () => pids (read at each run). `requests` is autocannon's (e.g. a setupRequest
 * that varies the id); `prepare` runs after the warm-up. Returns { name, closed: [{ connections, gateway, bare }], open }.
 */
export async function compare({ service, name, path, key, sides, requests, prepare, log = () => {} }) {
  const run = (side, load) =>
    measure({
      url: sides[side].url + path,
      key,
      seconds: protocol.seconds,
      groups: sides[side].groups(),
      requests,
      ...load,
    });
  for (const side of ["gateway", "bare"])
    await measure({ url: sides[side].url + path, key, seconds: 1, connections: 32, groups: {}, requests });
  // After the warm-up both pools hold their connections: what `prepare` reads of them (the backends) holds.
  await prepare?.();
  const closed = [];
  for (const connections of protocol.connections) {
    const runs = { gateway: [], bare: [] };
    for (let r = 0; r < protocol.runs; r++)
      for (const side of r % 2 ? ["bare", "gateway"] : ["gateway", "bare"])
        runs[side].push(await run(side, { connections }));
    const row = { connections, gateway: median(runs.gateway), bare: median(runs.bare) };
    closed.push(row);
    log(
      `${name} · ${connections} conns: ratio ${(row.gateway.rps / row.bare.rps).toFixed(2)} (${Math.round(row.gateway.rps)} ÷ ${Math.round(row.bare.rps)} req/s); CPU µs/req ${cpuText(row.gateway.cpuUs)} · ${cpuText(row.bare.cpuUs)}`,
    );
  }
  let open;
  if (protocol.openLoop) {
    const rate = Math.max(1, Math.round(Math.max(...closed.map((c) => c.bare.rps)) / 2));
    const runs = { gateway: [], bare: [] };
    for (let r = 0; r < protocol.runs; r++)
      for (const side of r % 2 ? ["bare", "gateway"] : ["gateway", "bare"])
        runs[side].push(await run(side, { connections: 32, rate }));
    open = { rate, gateway: median(runs.gateway), bare: median(runs.bare) };
    log(
      `${name} · open loop ${rate} req/s: p99 ${open.gateway.p99.toFixed(1)} ÷ ${open.bare.p99.toFixed(1)} ms`,
    );
  }
  const result = { service, name, closed, open };
  if (process.env.BENCH_SUMMARY) appendFileSync(process.env.BENCH_SUMMARY, `${JSON.stringify(result)}\n`);
  return result;
}

export const cpuText = (cpuUs) =>
  Object.entries(cpuUs)
    .map(([k, v]) => `${k} ${Math.round(v)}`)
    .join(" / ");
const ms = (n) => (n < 10 ? n.toFixed(2) : n.toFixed(1));

/** Markdown rows of compare()'s results: one per route and connection count. */
export function compareTable(results) {
  const rows = results.flatMap((r) =>
    r.closed.map((c) => {
      const open =
        r.open && c === r.closed.at(-1)
          ? `${(r.open.gateway.p99 / r.open.bare.p99).toFixed(1)}× (${ms(r.open.gateway.p99)} / ${ms(r.open.bare.p99)} ms at ${r.open.rate}/s)`
          : "";
      return `| ${r.name} | ${c.connections} | ${Math.round(c.gateway.rps)} | ${Math.round(c.bare.rps)} | **${(c.gateway.rps / c.bare.rps).toFixed(2)}** | ${ms(c.gateway.p50)} / ${ms(c.gateway.p99)} | ${ms(c.bare.p50)} / ${ms(c.bare.p99)} | ${cpuText(c.gateway.cpuUs)} · ${cpuText(c.bare.cpuUs)} | ${open} | ${c.gateway.errors + c.bare.errors} |`;
    }),
  );
  return [
    "| route | conns | gateway req/s | bare req/s | ratio | gateway p50 / p99 ms | bare p50 / p99 ms | CPU µs/req gateway side · bare side | open-loop p99 gateway ÷ bare | errors |",
    "|---|---|---|---|---|---|---|---|---|---|",
    ...rows,
  ];
}
