// Keeps package-lock.json usable by `npm ci` everywhere. Some packages (biome, turbo, buf) ship their
// binaries as per-platform optional dependencies; when the registry this lock was written against does not
// serve the other platforms' packages, npm leaves them out of the lock, and `npm ci` on any machine then
// refuses it ("Missing: @biomejs/cli-darwin-arm64 from lock file"). This adds a placeholder entry (name,
// version, optional) for each such dependency, which is what npm itself writes for a platform it skips.
// Run it after `npm install` changes the lock: `node scripts/lock-optional.mjs`.
import fs from "node:fs";

const file = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(fs.readFileSync(file, "utf8"));
let added = 0;
for (const [where, entry] of Object.entries(lock.packages)) {
  for (const [name, range] of Object.entries(entry.optionalDependencies ?? {})) {
    const path = `node_modules/${name}`;
    const nested = `${where ? `${where}/` : ""}node_modules/${name}`;
    if (lock.packages[path] || lock.packages[nested]) continue;
    const version = String(range).replace(/^[\^~=]/, "");
    lock.packages[path] = { version, ...(entry.dev ? { dev: true } : {}), optional: true };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b))),
);
fs.writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`lock-optional: ${added} placeholder entr${added === 1 ? "y" : "ies"} added`);
