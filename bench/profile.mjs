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
