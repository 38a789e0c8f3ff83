import { parentPort, workerData } from "node:worker_threads";
import { httpPoster } from "./delivery.js";
import type { PostBatch, PosterOptions, ResultBatch } from "./poster-thread.js";

/**
 * The thread of threadPoster (poster-thread.ts): each POST of a batch through
 * httpPoster, its result sent back as soon as it is decided, with the others
 * decided in the same turn of the event loop.
 */
const port = parentPort!;
const poster = httpPoster(workerData as PosterOptions);
let results: ResultBatch = [];

function answer(result: ResultBatch[number]) {
  if (results.length === 0) setImmediate(flush);
  results.push(result);
}

function flush() {
  const sending = results;
  results = [];
  port.postMessage(sending);
}

port.on("message", (m: PostBatch | "close") => {
  if (m === "close") {
    poster.close().finally(() => process.exit(0));
    return;
  }
  for (const [id, url, body, headers] of m)
    poster.post(url, body, headers).then(
      (result) => answer([id, result]),
      (err: unknown) => answer([id, undefined, err instanceof Error ? err.message : String(err)]),
    );
});
