import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
// The poster thread loads this module: the subpath keeps @funil/db's driver and stores out of its heap.
import { outsideTransaction } from "@funil/db/transactions";
import { Agent, type Dispatcher } from "undici";
import { type AttemptResult, judgeResponse, RESPONSE_KEPT } from "./schedule.js";
import { blockedAddress } from "./ssrf.js";
import { hostOf } from "./targets.js";

/**
 * The POST of one attempt (docs/api/webhooks.md §What a receiver gets). One undici Agent keeps connections
 * alive per host. Redirects are not followed (a dispatch never follows).
 * The response's status decides the attempt as soon as it arrives, with the
 * first RESPONSE_KEPT bytes of its body that came with it (the same read of
 * the socket: the attempt log's answer, never waited for); the body is read
 * on (up to 64 KiB, for at most `timeoutMs`) only so that the connection
 * can be reused.
 *
 * The POST is undici's dispatch with a handler of our own: request() wraps
 * every response in a Readable stream and an AbortSignal.timeout per attempt
 * adds a timer, a large share of a POST's client CPU (bench/RESULTS-webhooks.md).
 * The timeouts are
 * undici's own, on its coarse shared clock: the connection must be made, and
 * once the request is written its response must start, each within
 * `timeoutMs`.
 *
 * Unless private targets are allowed, every new connection is made to an
 * address checked at that moment: the Agent's DNS lookup refuses a name
 * that resolves to a private address, so a name rebound between the
 * subscription's check and the attempt cannot reach one.
 */
export interface Poster {
  post(url: string, body: string, headers: Record<string, string>): Promise<AttemptResult>;
  close(): Promise<void>;
}

class BlockedTarget extends Error {
  readonly code = "EFUNILBLOCKED";
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** dns.lookup, refusing the name when any address it resolves to is not public. */
function checkedLookup(hostname: string, options: object, callback: LookupCallback) {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    for (const a of addresses) {
      const why = blockedAddress(a.address);
      if (why) return callback(new BlockedTarget(`${hostname} resolves to ${a.address}, ${why}`), []);
    }
    const all = (options as { all?: boolean }).all;
    if (all) return callback(null, addresses);
    const first = addresses[0]!;
    callback(null, first.address, first.family);
  });
}

const causeOf = (err: unknown): string => {
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  if (e?.cause && !(err instanceof BlockedTarget)) {
    const inner = causeOf(e.cause);
    if (inner) return inner;
  }
  if (err instanceof BlockedTarget) return `refused target: ${err.message}`;
  if (e?.code === "ECONNREFUSED") return "connection refused";
  if (e?.code === "ENOTFOUND" || e?.code === "EAI_AGAIN") return "host does not resolve";
  if (e?.code === "ECONNRESET" || e?.code === "UND_ERR_SOCKET") return "connection reset";
  if (e?.code === "UND_ERR_HEADERS_TIMEOUT" || e?.code === "UND_ERR_CONNECT_TIMEOUT") return "timeout";
  return e?.code ?? e?.message ?? String(err);
};

/** How much of a response body is read (and dropped) before its connection is given up instead. */
const BODY_LIMIT = 64 * 1024;

/** The bytes kept of an answer as text PostgreSQL can hold (no NUL); undefined when there were none. */
function keptText(chunks: Buffer[]): string | undefined {
  if (chunks.length === 0) return undefined;
  const text = Buffer.concat(chunks).toString("utf8");
  return text.includes("\u0000") ? text.replaceAll("\u0000", "\uFFFD") : text;
}

/** Where a URL's POST goes, parsed once per URL: origin, path, or why it is refused. */
interface Target {
  origin: string;
  path: string;
  refused?: string;
}

export function httpPoster(opts: { timeoutMs: number; allowPrivate: boolean }): Poster {
  const agent = new Agent({
    keepAliveTimeout: 30_000,
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    connect: opts.allowPrivate
      ? { timeout: opts.timeoutMs }
      : { timeout: opts.timeoutMs, lookup: checkedLookup },
  });

  const targets = new Map<string, Target>();
  function targetOf(url: string): Target {
    let target = targets.get(url);
    if (!target) {
      const parsed = new URL(url);
      const host = hostOf(parsed);
      // An address in the URL itself is never looked up: it is judged here.
      const why = !opts.allowPrivate && isIP(host) ? blockedAddress(host) : undefined;
      target = {
        origin: parsed.origin,
        path: `${parsed.pathname}${parsed.search}`,
        ...(why ? { refused: `refused target: ${host} is ${why}` } : {}),
      };
      if (targets.size >= 10_000) targets.clear();
      targets.set(url, target);
    }
    return target;
  }

  // Bodies still being read after their status came: one coarse sweep gives up those past the timeout.
  const draining = new Map<Dispatcher.DispatchController, number>();
  let sweep: NodeJS.Timeout | undefined;
  function drain(controller: Dispatcher.DispatchController) {
    draining.set(controller, performance.now());
    sweep ??= setInterval(
      () => {
        const now = performance.now();
        for (const [c, since] of draining)
          if (now - since > opts.timeoutMs) {
            draining.delete(c);
            c.abort(new Error("response body took too long"));
          }
        if (draining.size === 0) {
          clearInterval(sweep);
          sweep = undefined;
        }
      },
      Math.min(1_000, opts.timeoutMs),
    );
    sweep.unref();
  }

  return {
    post(url, body, headers) {
      outsideTransaction("HTTP POST to a webhook receiver");
      let target: Target;
      try {
        target = targetOf(url);
      } catch (err) {
        return Promise.resolve({ ok: false, error: causeOf(err) });
      }
      if (target.refused) return Promise.resolve({ ok: false, error: target.refused });
      return new Promise<AttemptResult>((resolve) => {
        let decided = false;
        let received = 0;
        let status = 0;
        const kept: Buffer[] = [];
        const decide = (result: AttemptResult) => {
          if (decided) return;
          decided = true;
          resolve(result);
        };
        // The status with what of the body came in the same read of the socket (llhttp hands the
        // status and those bytes over in one go, before the next turn of the event loop).
        const answered = () => decide({ ...judgeResponse(status), body: keptText(kept) });
        const handler: Dispatcher.DispatchHandler = {
          // Its presence is what makes undici take this for a handler of its current interface.
          onRequestStart() {},
          onResponseStart(controller, statusCode) {
            if (statusCode < 200) return; // informational: the real status follows
            status = statusCode;
            setImmediate(answered);
            drain(controller);
          },
          onResponseData(controller, chunk) {
            if (!decided && received < RESPONSE_KEPT) kept.push(chunk.subarray(0, RESPONSE_KEPT - received));
            received += chunk.length;
            if (received > BODY_LIMIT) controller.abort(new Error("response body over 64 KiB"));
          },
          onResponseEnd(controller) {
            draining.delete(controller);
            answered();
          },
          onResponseError(controller, err) {
            draining.delete(controller);
            if (status) return answered();
            const cause = causeOf(err);
            decide({ ok: false, error: cause === "timeout" ? `timeout after ${opts.timeoutMs} ms` : cause });
          },
        };
        try {
          agent.dispatch(
            { origin: target.origin, path: target.path, method: "POST", headers, body },
            handler,
          );
        } catch (err) {
          decide({ ok: false, error: causeOf(err) });
        }
      });
    },
    close: () => {
      clearInterval(sweep);
      return agent.close();
    },
  };
}
