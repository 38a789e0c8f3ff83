// A postgres.js pool kept saturated (`node bench/pg-pool.mjs`): BENCH_CONCURRENCY (default 32) loops each
// awaiting `select 1` on a pool of BENCH_POOL (default 4) connections for BENCH_SECONDS (default 12),
// printing the statements answered in each second, the pool process's CPU µs per statement (from /proc)
// and its RSS. With more statements in flight than connections, postgres.js pipelines them on busy
// connections; the queue it keeps them in must not grow with the statements (patches/postgres+3.4.9.patch,
// packages/db/src/pool-queue.test.ts): the figures of each second stay level. bench/RESULTS-pg-pool.md has a run.
import { readFileSync } from "node:fs";
import postgres from "postgres";
import { ensureInfra } from "../scripts/infra.mjs";
import { cpuSeconds, rssMb } from "./procstat.mjs";

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const POOL = Number(process.env.BENCH_POOL ?? 4);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 12);
const cpuMicros = () => cpuSeconds(process.pid) * 1e6;

await ensureInfra();
const sql = postgres({
  host: process.env.PGHOST ?? "127.0.0.1",
  user: process.env.PGUSER ?? "postgres",
  database: "postgres",
  max: POOL,
  onnotice() {},
});
let answered = 0;
let stop = false;
const loop = async () => {
  while (!stop) {
    await sql`select 1 as x`;
    answered++;
  }
};
const loops = Array.from({ length: CONCURRENCY }, loop);
const rows = [];
for (let s = 1; s <= SECONDS; s++) {
  const [n0, c0] = [answered, cpuMicros()];
  await new Promise((r) => setTimeout(r, 1000));
  const n = answered - n0;
  rows.push({ s, n, cpu: (cpuMicros() - c0) / n, rss: rssMb(process.pid) });
}
stop = true;
await Promise.all(loops);
await sql.end();
const { version } = JSON.parse(
  readFileSync(new URL("../node_modules/postgres/package.json", import.meta.url), "utf8"),
);
console.log(`${CONCURRENCY} loops on a pool of ${POOL}, postgres.js ${version}\n`);
console.log("| second | statements/s | CPU µs/statement | RSS MB |\n|---:|---:|---:|---:|");
for (const r of rows) console.log(`| ${r.s} | ${r.n} | ${r.cpu.toFixed(1)} | ${r.rss.toFixed(0)} |`);
