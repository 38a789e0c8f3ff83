/**
 * What an attempt's outcome does to its delivery and subscription (docs/api/webhooks.md
 * §Retries, §Circuit breaker, §Scope revoked): pure, so every branch is tested
 * without a clock or a receiver.
 */
export interface AttemptResult {
  ok: boolean;
  /** The receiver's HTTP status, when it answered. */
  status?: number | undefined;
  /** Why it failed: timeout, refused, redirect, HTTP status… */
  error?: string | undefined;
  /** The first RESPONSE_KEPT bytes of the receiver's answer that came with its status (the attempt log). */
  body?: string | undefined;
}

/** How much of a receiver's answer the attempt log keeps (docs/api/webhooks.md §Attempt log). */
export const RESPONSE_KEPT = 1024;

export type Next =
  | { status: "delivered" }
  | { status: "pending"; retryInMs: number }
  | { status: "dead"; breaker: boolean };

/**
 * After attempt number `attempts` (1-based) of a delivery: delivered on a
 * 2xx; else another attempt after the schedule's delay while attempts remain
 * (schedule.length + 1 in all: six with the default); else dead. The breaker
 * opens when the subscription has failed without a success for `windowMs`
 * (failingSince: the first failure since the last success, this one if none).
 */
export function afterAttempt(opts: {
  attempts: number;
  result: AttemptResult;
  scheduleMs: readonly number[];
  now: Date;
  failingSince: Date | null;
  windowMs: number;
}): Next {
  if (opts.result.ok) return { status: "delivered" };
  const since = opts.failingSince ?? opts.now;
  if (opts.now.getTime() - since.getTime() >= opts.windowMs) return { status: "dead", breaker: true };
  const delay = opts.scheduleMs[opts.attempts - 1];
  if (delay === undefined) return { status: "dead", breaker: false };
  return { status: "pending", retryInMs: delay };
}

/** A 2xx is a success; anything else, a redirect included, is a failure (docs/api/webhooks.md §Retries 1). */
export function judgeResponse(status: number): AttemptResult {
  if (status >= 200 && status < 300) return { ok: true, status };
  if (status >= 300 && status < 400) return { ok: false, status, error: `redirect ${status} not followed` };
  return { ok: false, status, error: `receiver answered ${status}` };
}
