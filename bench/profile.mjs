// Reads the .cpuprofile files that `node --cpu-prof` wrote and lists the functions with the most self
// time: where a process's CPU went, without opening a profiler.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

/** Top `count` entries by self time of one profile, idle time left out: [{ name, ms, share }]. */
export function topSelfTime(file, count = 15) {
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  profile.samples.forEach((id, i) => {
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    if (functionName === "(idle)") return;
    const where = url ? ` ${shorten(url)}:${lineNumber + 1}` : "";
    const name = `${functionName || "(anonymous)"}${where}`;
    self.set(name, (self.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, ms]) => ({ name, ms, share: ms / total }));
}

/**
 * Self time per package: each sample goes to the nearest frame on its stack that belongs to a package
 * (node_modules/<name>) or to the repository's own code, so that Node's internals and native work (socket
 * writes, the HTTP/2 core) count for whoever called them. GC and (program) stay on their own.
 */
export function byPackage(file, count = 12) {
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const ownerOf = (id) => {
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const { functionName, url } = byId.get(at).callFrame;
      if (at === id && functionName.startsWith("(")) return functionName;
      const owner = packageOf(url);
      if (owner) return owner;
    }
    return "node internals";
  };
  const self = new Map();
  profile.samples.forEach((id, i) => {
    const owner = ownerOf(id);
    if (owner === "(idle)") return;
    self.set(owner, (self.get(owner) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, ms]) => ({ name, ms, share: ms / total }));
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
