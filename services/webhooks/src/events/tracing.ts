import type { EventEnvelope } from "@funil/db";
import {
  context,
  outgoingTraceHeaders,
  SpanKind,
  SpanStatusCode,
  sampled,
  trace,
  traceHeaders,
  tracer,
  tracingOn,
} from "@funil/telemetry";
import type { AttemptResult } from "../schedule.js";

/** An event's fan-out as a span: the context its delivery jobs carry on, and what runs inside it. */
export interface FanOutSpan {
  /** The traceparent of the fan-out's span, for the jobs it queues; undefined when tracing is off. */
  traceparent: string | undefined;
  /** Runs `fn` with the span active. */
  run<T>(fn: () => T): T;
  end(err?: unknown): void;
}

const UNTRACED: FanOutSpan = { traceparent: undefined, run: (fn) => fn(), end: () => {} };

/**
 * A span for an event's fan-out, child of the context its message carries (the consumer's span): its
 * deliveries' jobs carry it on, so that each attempt joins the trace of the write that made the event.
 * Outside a sampled trace there is none, and its jobs carry the decision on (outgoingTraceHeaders):
 * never a trace of their own.
 */
export function fanOutSpan(event: EventEnvelope): FanOutSpan {
  if (!tracingOn()) return UNTRACED;
  const active = context.active();
  if (!sampled(active)) return { ...UNTRACED, traceparent: outgoingTraceHeaders(active)?.traceparent };
  const span = tracer().startSpan("webhooks fan-out", { kind: SpanKind.INTERNAL }, active);
  span.setAttributes({ "funil.event.type": event.type, "funil.event.id": event.id });
  const ctx = trace.setSpan(active, span);
  return {
    traceparent: traceHeaders(ctx)?.traceparent,
    run: (fn) => context.with(ctx, fn),
    end(err) {
      if (err !== undefined) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  };
}

/** What an attempt's span says of its delivery: never the URL itself (its path or query may hold a secret). */
interface Attempted {
  id: string;
  url: string;
  event: string;
  /** Attempts made before this one. */
  attempts: number;
}

/** The receiver's host and port, or undefined for a URL that does not parse (it fails on its own). */
function hostOf(url: string): { host: string; port?: number } | undefined {
  try {
    const u = new URL(url);
    return { host: u.hostname, ...(u.port ? { port: Number(u.port) } : {}) };
  } catch {
    return undefined;
  }
}

/**
 * One delivery attempt as a CLIENT span, child of the active context (its job's, carried from the event's
 * fan-out): the receiver's host, the attempt's number, the status answered and the outcome; a failed
 * attempt is an error span whose `error.type` is the kind of failure (timeout, refused, a status…).
 * Outside a sampled trace, none: an attempt never begins a trace of its own.
 */
export async function tracedAttempt(
  delivery: Attempted,
  post: () => Promise<AttemptResult>,
): Promise<AttemptResult> {
  const active = context.active();
  if (!tracingOn() || !sampled(active)) return post();
  const span = tracer().startSpan("webhook attempt", { kind: SpanKind.CLIENT }, active);
  const target = hostOf(delivery.url);
  span.setAttributes({
    "http.request.method": "POST",
    ...(target ? { "server.address": target.host } : {}),
    ...(target?.port ? { "server.port": target.port } : {}),
    "funil.webhook.delivery_id": delivery.id,
    "funil.event.type": delivery.event,
    "funil.webhook.attempt": delivery.attempts + 1,
  });
  try {
    const result = await post();
    if (result.status !== undefined) span.setAttribute("http.response.status_code", result.status);
    span.setAttribute("funil.webhook.outcome", result.ok ? "delivered" : "failed");
    if (!result.ok) {
      span.setAttribute("error.type", errorType(result));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    return result;
  } catch (err) {
    span.setAttribute("funil.webhook.outcome", "failed");
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}

/** The kind of failure: the answered status, or the first word of the cause (`timeout`, `ECONNREFUSED`). */
function errorType(result: AttemptResult): string {
  if (result.status !== undefined) return String(result.status);
  return (result.error ?? "failed").split(/[\s:]/, 1)[0] || "failed";
}
