import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { Agent, request } from "undici";
import { type AttemptResult, judgeResponse } from "./schedule.js";
import { blockedAddress } from "./ssrf.js";
import { hostOf } from "./targets.js";

/**
 * The POST of one attempt (API.md §11). One undici Agent keeps connections
 * alive per host. Redirects are not followed (undici's request never does).
 * The timeout is undici's own, on its coarse shared clock: the connection
 * must be made, and once the request is written its response must start,
 * each within `timeoutMs` (an AbortSignal.timeout per attempt cost 15-20 µs
 * of CPU, a third of the POST's).
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

export function httpPoster(opts: { timeoutMs: number; allowPrivate: boolean }): Poster {
  const agent = new Agent({
    keepAliveTimeout: 30_000,
    headersTimeout: opts.timeoutMs,
    // Only the rest of a body whose status has decided the attempt: read so the connection can be reused.
    bodyTimeout: opts.timeoutMs,
    connect: opts.allowPrivate
      ? { timeout: opts.timeoutMs }
      : { timeout: opts.timeoutMs, lookup: checkedLookup },
  });
  return {
    async post(url, body, headers) {
      const target = new URL(url);
      const host = hostOf(target);
      // An address in the URL itself is never looked up: it is judged here.
      if (!opts.allowPrivate && isIP(host)) {
        const why = blockedAddress(host);
        if (why) return { ok: false, error: `refused target: ${host} is ${why}` };
      }
      try {
        const res = await request(target, { method: "POST", body, headers, dispatcher: agent });
        // The status decides; the body is read to the end only so that the connection can be reused.
        await res.body.dump({ limit: 64 * 1024 }).catch(() => {});
        return judgeResponse(res.statusCode);
      } catch (err) {
        const cause = causeOf(err);
        return { ok: false, error: cause === "timeout" ? `timeout after ${opts.timeoutMs} ms` : cause };
      }
    },
    close: () => agent.close(),
  };
}
