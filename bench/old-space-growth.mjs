// A preload (`node --import=./bench/old-space-growth.mjs`) that adds up how much V8's old space grows, sampled
// every 20 ms from the process's start, and writes the total to /tmp/old-space-<pid>.txt when the process
// exits: what reaches old space (objects promoted out of the young generation) over the run, to divide by
// the requests served. Falls (major collections) are not subtracted.
import { writeFileSync } from "node:fs";
import v8 from "node:v8";

const oldSpace = () =>
  v8.getHeapSpaceStatistics().find((s) => s.space_name === "old_space")?.space_used_size ?? 0;
const started = Date.now();
let last = oldSpace();
let grown = 0;
setInterval(() => {
  const now = oldSpace();
  if (now > last) grown += now - last;
  last = now;
}, 20).unref();
process.on("exit", () =>
  writeFileSync(
    `/tmp/old-space-${process.pid}.txt`,
    `${process.argv[1]}: old space grew ${(grown / 1e6).toFixed(1)} MB in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  ),
);
