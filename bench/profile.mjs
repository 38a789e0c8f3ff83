// Reads the .cpuprofile files that `node --cpu-prof` wrote and lists the functions with the most self
// time: where a process's CPU went, without opening a profiler.
//
//   node bench/profile.mjs A.cpuprofile [B.cpuprofile] [--from S]
// prints the profile's busy milliseconds second by second (a process's CPU per second falls for many
// seconds after its start while the JIT warms: choose S past that), then its self time by package and by
// function from second S on; with B, both side by side with B − A, the largest differences first.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** A profile's samples: who (node id), how long (ms) and when (s since the profile started), idle left out. */
function samplesOf(file) {
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  let at = profile.startTime;
  const samples = [];
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (byId.get(id).callFrame.functionName !== "(idle)")
      samples.push({ id, ms: delta / 1000, s: (at - profile.startTime) / 1e6 });
  });
  return { byId, parent, samples };
}

/** Self time summed by `keyOf(id)` over the samples (samplesOf) from second `from` on: [{ name, ms, share }], largest first. */
function selfTime(p, keyOf, from) {
  const self = new Map();
  let total = 0;
  for (const { id, ms, s } of p.samples) {
    if (s < from) continue;
    const key = keyOf(p, id);
    self.set(key, (self.get(key) ?? 0) + ms);
    total += ms;
  }
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([name, ms]) => ({ name, ms, share: ms / total }));
}

const functionOf = ({ byId }, id) => {
  const { functionName, url, lineNumber } = byId.get(id).callFrame;
  const where = url ? ` ${shorten(url)}:${lineNumber + 1}` : "";
  return `${functionName || "(anonymous)"}${where}`;
};

/**
 * Each sample goes to the nearest frame on its stack that belongs to a package (node_modules/<name>) or to
 * the repository's own code, so that Node's internals and native work (socket writes, the HTTP/2 core)
 * count for whoever called them. GC and (program) stay on their own.
 */
const packageOwning = ({ byId, parent }, id) => {
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const { functionName, url } = byId.get(at).callFrame;
    if (at === id && functionName.startsWith("(")) return functionName;
    const owner = packageOf(url);
    if (owner) return owner;
  }
  return "node internals";
};

/** Top `count` entries by self time of one profile, from second `from` on: [{ name, ms, share }]. */
export const topSelfTime = (file, count = 15, from = 0) =>
  selfTime(samplesOf(file), functionOf, from).slice(0, count);

/** Self time per package (packageOwning), from second `from` on. */
export const byPackage = (file, count = 12, from = 0) =>
  selfTime(samplesOf(file), packageOwning, from).slice(0, count);

/** Busy (not idle) milliseconds in each second since the profile started (p: samplesOf). */
function busySeconds(p) {
  const seconds = [];
  for (const { ms, s } of p.samples) seconds[Math.floor(s)] = (seconds[Math.floor(s)] ?? 0) + ms;
  return Array.from(seconds, (ms) => Math.round(ms ?? 0));
}

function packageOf(url) {
  if (!url || url.startsWith("node:")) return undefined;
  const p = url.replace(/^file:\/\//, "");
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(p.slice(p.lastIndexOf("node_modules/")));
  if (m) return m[1];
  const own = /(?:packages|services)\/[^/]+/.exec(p);
  return own ? own[0] : undefined;
}

/** node_modules/x/… and the repository's own paths, without the machine's prefix. */
function shorten(url) {
  const p = url.replace(/^file:\/\//, "");
  const i = p.lastIndexOf("node_modules/");
  if (i >= 0) return p.slice(i + "node_modules/".length);
  const parts = p.split(path.sep);
  return parts.slice(-3).join("/");
}

/** The newest profile written into `dir` by the process `name` (run.mjs gives each its own directory). */
export function profilesIn(dir) {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => path.join(dir, f));
}

/** The command line (see the top of this file). */
function main(args) {
  const fromAt = args.indexOf("--from");
  const from = fromAt >= 0 ? Number(args[fromAt + 1]) : 0;
  const files = args.filter((a, i) => a.endsWith(".cpuprofile") && (fromAt < 0 || i !== fromAt + 1));
  if (files.length === 0 || files.length > 2 || !Number.isFinite(from)) {
    process.stderr.write("usage: node bench/profile.mjs A.cpuprofile [B.cpuprofile] [--from S]\n");
    process.exit(2);
  }
  const profiles = files.map(samplesOf);
  for (const [i, file] of files.entries())
    console.log(`busy ms per second, ${file}:\n  ${busySeconds(profiles[i]).join(" ")}`);
  const [a, b] = profiles;
  for (const [title, of, count] of [
    ["by package", packageOwning, 20],
    ["by function", functionOf, 40],
  ]) {
    const left = new Map(selfTime(a, of, from).map((e) => [e.name, e.ms]));
    const right = b ? new Map(selfTime(b, of, from).map((e) => [e.name, e.ms])) : undefined;
    const sum = (m) => [...m.values()].reduce((x, y) => x + y, 0);
    console.log(
      `\n${title}, from second ${from}: ms (A${right ? ", B, B − A" : ""}); in all ${Math.round(sum(left))}${right ? `, ${Math.round(sum(right))}` : ""}`,
    );
    const names = [...new Set([...left.keys(), ...(right?.keys() ?? [])])];
    const delta = (n) => (right?.get(n) ?? 0) - (left.get(n) ?? 0);
    names.sort(
      right ? (x, y) => Math.abs(delta(y)) - Math.abs(delta(x)) : (x, y) => left.get(y) - left.get(x),
    );
    for (const name of names.slice(0, count)) {
      const cells = [left.get(name) ?? 0, ...(right ? [right.get(name) ?? 0, delta(name)] : [])];
      console.log(`${cells.map((ms) => Math.round(ms).toString().padStart(7)).join("")}  ${name}`);
    }
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  main(process.argv.slice(2));
