import { Worker } from "node:worker_threads";
import type { Poster } from "./delivery.js";
import type { AttemptResult } from "./schedule.js";

/** What the main thread sends: [id, url, body, headers] × n, or "close". */
export type PostBatch = Array<[number, string, string, Record<string, string>]>;
/** What the thread answers, as the POSTs are decided: [id, result], or [id, undefined, why] if one threw. */
export type ResultBatch = Array<[number, AttemptResult] | [number, undefined, string]>;

export interface PosterOptions {
  timeoutMs: number;
  allowPrivate: boolean;
}

/** A Poster whose POSTs run in a thread; `thread()` is that thread, if one runs now (for tests). */
export interface ThreadPoster extends Poster {
  thread(): Worker | undefined;
}

interface Waiting {
  resolve: (r: AttemptResult) => void;
  reject: (e: Error) => void;
}

interface Thread {
  worker: Worker;
  waiting: Map<number, Waiting>;
  batch: PostBatch;
}

/**
 * httpPoster (delivery.ts) in a worker thread of its own (poster-worker.ts):
 * the POSTs, with undici's parsing and the kernel's socket writes, run beside
 * the main thread's reads, key checks, signatures and records instead of
 * taking turns with them: in one thread the process saturates a core while the
 * host has CPU left (bench/RESULTS-webhooks.md). The POSTs asked within one turn of the event
 * loop go to the thread in one message, and their results come back the same
 * way.
 *
 * If the thread dies, the POSTs it held fail (the sender hands their attempts
 * back to be tried again, not counted) and the next POST starts a new thread.
 * Worker threads rather than more sender processes or sender threads: two
 * sender threads, each with its own pool and NATS connection, would halve the
 * batches of reads and records, which is what makes a delivery cheap.
 */
export function threadPoster(opts: PosterOptions): ThreadPoster {
  let nextId = 0;
  let current: Thread | undefined;
  let closed = false;

  function spawn(): Thread {
    const worker = new Worker(new URL("./poster-worker.js", import.meta.url), { workerData: opts });
    const thread: Thread = { worker, waiting: new Map(), batch: [] };
    worker.on("message", (results: ResultBatch) => {
      for (const [id, result, thrown] of results) {
        const w = thread.waiting.get(id);
        thread.waiting.delete(id);
        if (result) w?.resolve(result);
        else w?.reject(new Error(thrown));
      }
    });
    // A thread that dies takes its POSTs with it: theirs fail here, the next POST starts a new thread.
    const lost = (why: string) => {
      if (current === thread) current = undefined;
      const error = new Error(`webhook POST thread ${why}`);
      for (const w of thread.waiting.values()) w.reject(error);
      thread.waiting.clear();
    };
    worker.on("error", (err) => lost(`failed: ${err.message}`));
    worker.on("exit", (code) => lost(`stopped (${code})`));
    worker.unref();
    return thread;
  }

  function flush(thread: Thread) {
    const sending = thread.batch;
    thread.batch = [];
    // A thread lost since the batch began has already failed its POSTs (and emptied `waiting`).
    if (thread.waiting.size > 0) thread.worker.postMessage(sending);
  }

  return {
    post(url, body, headers) {
      if (closed) return Promise.reject(new Error("webhook POST thread closed"));
      current ??= spawn();
      const thread = current;
      const id = nextId++;
      if (thread.batch.length === 0) setImmediate(flush, thread);
      thread.batch.push([id, url, body, headers]);
      return new Promise((resolve, reject) => thread.waiting.set(id, { resolve, reject }));
    },
    async close() {
      closed = true;
      const thread = current;
      if (!thread) return;
      await new Promise<void>((resolve) => {
        thread.worker.once("exit", () => resolve());
        thread.worker.postMessage("close");
      });
    },
    thread: () => current?.worker,
  };
}
