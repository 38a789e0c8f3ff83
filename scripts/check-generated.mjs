// CI guard: the generated contracts and the AsyncAPI document are committed, so regenerating them must
// change nothing.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const GEN = "packages/contracts/src/gen";

function run(command, args, capture = false) {
  const result = spawnSync(command, args, {
    cwd: root,
    stdio: capture ? ["ignore", "pipe", "inherit"] : "inherit",
    encoding: "utf8",
  });
  if (result.status !== 0) {
    console.error(`${command} ${args.join(" ")} failed${result.error ? `: ${result.error.message}` : ""}`);
    process.exit(1);
  }
  return result.stdout;
}

// --no: use the project's own buf, never fetch a package that happens to be called "buf".
run("npx", ["--no", "--", "buf", "generate"]);
const changes = run("git", ["status", "--porcelain", "--", GEN], true);
if (changes.trim()) {
  // The stat covers changed files; the porcelain list also shows new and deleted ones.
  run("git", ["--no-pager", "diff", "--stat", "--", GEN]);
  console.error(changes.trimEnd());
  console.error("generated code is stale: run npm run generate and commit");
  process.exit(1);
}
console.log(`${GEN} is up to date`);

// The AsyncAPI document is written from the built gateway (and what it imports): built first, turbo
// skipping what is current.
run("npx", ["--no", "--", "turbo", "run", "build", "--filter=@funil/gateway", "--output-logs=errors-only"]);
run("node", ["scripts/asyncapi.mjs", "--check"]);
