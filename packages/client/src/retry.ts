import { FunilError, retryAfterOf } from "./errors.js";

/**
 * How a call is retried (docs/api/conventions.md §Outages and retries): a
 * 429 or 503 answer, or no answer at all (a cut connection, a try that timed
 * out), is tried again after `retry-after` when the API gave one, else after
 * a jittered exponential backoff, as long as the client's retry budget lasts.
 * Every try of a POST carries the same Idempotency-Key, so a retry never does
 * the work twice.
 */
export interface RetryOptions {
  /** Tries after the first, per call. Default 4. */
  maxRetries?: number;
  /** First backoff, in ms, doubled at each try (full jitter). Default 200. */
  baseDelayMs?: number;
  /** No wait is longer than this, retry-after included. Default 20 000. */
  maxDelayMs?: number;
  /**
   * The retry budget of the client: retries may add at most this share of
   * the calls made (plus `minRetriesPerSecond`), so that a struggling API is
   * not flooded by every client retrying at once. Default 0.2.
   */
  budgetRatio?: number;
  /** Retries always allowed per second, whatever the ratio. Default 2. */
  minRetriesPerSecond?: number;
}

/** A token bucket: each call deposits `ratio`, each retry withdraws 1; a floor refills over time. */
export class RetryBudget {
  private tokens: number;
  private last = Date.now();

  constructor(
    private readonly ratio: number,
    private readonly perSecond: number,
    private readonly cap = Math.max(10, perSecond * 10),
  ) {
    this.tokens = cap;
  }

  private refill() {
    const now = Date.now();
    this.tokens = Math.min(this.cap, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
  }

  deposit() {
    this.refill();
    this.tokens = Math.min(this.cap, this.tokens + this.ratio);
  }

  withdraw(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export interface TryOptions {
  retry: Required<RetryOptions>;
  budget: RetryBudget;
  /** Per try, in ms; 0 for none. */
  timeoutMs: number;
  /** The caller's signal: aborts the call, its waits included. */
  signal?: AbortSignal;
  /** Sent on every try of a request that has none (a POST that takes one). */
  idempotencyKey?: string;
  /** Whether the request may be sent again once it may have reached the API (GET, PATCH, DELETE, a keyed POST). */
  repeatable: boolean;
  /** Seen before each retry (logging, tests). */
  onRetry?: (info: { attempt: number; delayMs: number; reason: string }) => void;
}

const RETRIED_STATUSES = new Set([429, 503]);

/** The wait before retry `attempt` (1-based): retry-after when given, else full jitter. */
export function backoff(attempt: number, retry: Required<RetryOptions>, retryAfterSec?: number): number {
  if (retryAfterSec !== undefined)
    // A little jitter on top, so that clients told the same second do not come back together.
    return Math.min(retry.maxDelayMs, retryAfterSec * 1000 + Math.random() * retry.baseDelayMs);
  return Math.random() * Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function failure(err: unknown, signal: AbortSignal | undefined, timedOut: boolean): FunilError {
  if (err instanceof FunilError) return err;
  if (signal?.aborted && !timedOut)
    return new FunilError({ code: "aborted", status: 0, message: "the call was aborted", cause: err });
  if (timedOut)
    return new FunilError({
      code: "timeout",
      status: 0,
      message: "the API did not answer in time",
      cause: err,
    });
  return new FunilError({
    code: "network_error",
    status: 0,
    message: `no answer from the API: ${err instanceof Error ? err.message : String(err)}`,
    cause: err,
  });
}

/** One try of the request, bounded by the per-try timeout and the caller's signal. */
async function tryOnce(request: Request, fetchImpl: typeof fetch, opts: TryOptions) {
  const timeout = opts.timeoutMs > 0 ? AbortSignal.timeout(opts.timeoutMs) : undefined;
  const signals = [opts.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
  const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
  try {
    return await fetchImpl(new Request(request.clone(), signal ? { signal } : {}));
  } catch (err) {
    throw failure(err, opts.signal, timeout?.aborted === true && opts.signal?.aborted !== true);
  }
}

/** A fetch that retries as RetryOptions says; every failure it throws is a FunilError. */
export function retryingFetch(fetchImpl: typeof fetch, opts: TryOptions) {
  return async (request: Request): Promise<Response> => {
    if (opts.idempotencyKey && !request.headers.has("idempotency-key"))
      request.headers.set("idempotency-key", opts.idempotencyKey);
    opts.budget.deposit();
    for (let attempt = 1; ; attempt++) {
      let response: Response | undefined;
      let error: FunilError | undefined;
      try {
        response = await tryOnce(request, fetchImpl, opts);
      } catch (err) {
        error = err as FunilError;
        if (error.code === "aborted") throw error;
      }
      if (response && !RETRIED_STATUSES.has(response.status)) return response;
      // A 429 was refused before any work; anything else may have done it.
      const retriable = response?.status === 429 || opts.repeatable;
      if (!retriable || attempt > opts.retry.maxRetries || !opts.budget.withdraw()) {
        if (response) return response;
        throw error;
      }
      const delayMs = backoff(attempt, opts.retry, response ? retryAfterOf(response) : undefined);
      opts.onRetry?.({ attempt, delayMs, reason: response ? `status ${response.status}` : error!.code });
      await response?.body?.cancel();
      try {
        await sleep(delayMs, opts.signal);
      } catch (err) {
        throw failure(err, opts.signal, false);
      }
    }
  };
}
