import {
  type Context,
  context,
  extractContext,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  tracer,
  tracingOn,
  unsampledByParent,
  unsampledTraceparent,
} from "@funil/telemetry";
import type { JsMsg } from "@nats-io/jetstream";

/**
 * The trace context a message carries (the W3C traceparent and tracestate headers the outbox relay sets
 * from the write that made it), on top of no active span; a message without one, or with a malformed one,
 * gives the empty context and its work begins a trace of its own.
 */
export function messageContext(m: JsMsg): Context {
  const carrier: Record<string, string> = {};
  const traceparent = m.headers?.get("traceparent");
  if (traceparent) carrier.traceparent = traceparent;
  const tracestate = m.headers?.get("tracestate");
  if (tracestate) carrier.tracestate = tracestate;
  return extractContext(carrier);
}

/**
 * A CONSUMER span for one message of `durable`, child of the context the message carries. Its attributes
 * are built only when it is recorded: the samplers look at the trace alone.
 */
function startSpan(durable: string, m: JsMsg, parent: Context, batch?: number): Span {
  const span = tracer().startSpan(`process ${durable}`, { kind: SpanKind.CONSUMER }, parent);
  if (span.isRecording())
    span.setAttributes({
      "messaging.system": "nats",
      "messaging.operation.type": "process",
      "messaging.destination.name": m.subject,
      "messaging.consumer.group.name": durable,
      ...(m.info.redelivered ? { "messaging.nats.redelivered": true } : {}),
      ...(batch === undefined ? {} : { "messaging.batch.message_count": batch }),
    });
  return span;
}

/** Ends the spans when the work settles; a failure (the message comes back) marks them as errors. */
function endWith(spans: Span[], work: Promise<void>): Promise<void> {
  return work.then(
    () => {
      for (const span of spans) span.end();
    },
    (err: unknown) => {
      for (const span of spans) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: String((err as Error)?.message ?? err) });
        span.end();
      }
      throw err;
    },
  );
}

/**
 * The handler of one message, run inside a span that continues the message's trace (so its statements,
 * its calls and the events it writes belong to the trace of the write that sent it). Off, the handler as
 * it is: nothing is read or allocated per message. A message whose writer did not sample it
 * (unsampledTraceparent, read from its header before any context is made; unsampledByParent) is handled
 * as it is too: no span, no context.
 */
export function traceMessages(durable: string, handle: (m: JsMsg) => Promise<void>) {
  return (m: JsMsg): Promise<void> => {
    if (!tracingOn() || unsampledTraceparent(m.headers?.get("traceparent"))) return handle(m);
    const parent = messageContext(m);
    if (unsampledByParent(parent)) return handle(m);
    const span = startSpan(durable, m, parent);
    return endWith([span], context.with(trace.setSpan(parent, span), handle, undefined, m));
  };
}

/**
 * The handler of a batch: every message gets a span in its own trace, and the batch's shared work (one
 * transaction for all of them) runs under the first recorded one, so its statements show in that trace.
 * Messages whose writers did not sample them (unsampledByParent) get none; a batch of only those is
 * handled as it is.
 */
export function traceBatches(durable: string, handle: (msgs: JsMsg[]) => Promise<void>) {
  return (msgs: JsMsg[]): Promise<void> => {
    if (!tracingOn() || msgs.length === 0) return handle(msgs);
    const started: Array<{ parent: Context; span: Span }> = [];
    for (const m of msgs) {
      if (unsampledTraceparent(m.headers?.get("traceparent"))) continue;
      const parent = messageContext(m);
      if (!unsampledByParent(parent))
        started.push({ parent, span: startSpan(durable, m, parent, msgs.length) });
    }
    const lead = started.find((s) => s.span.isRecording()) ?? started[0];
    if (!lead) return handle(msgs);
    const work = context.with(trace.setSpan(lead.parent, lead.span), handle, undefined, msgs);
    return endWith(
      started.map((s) => s.span),
      work,
    );
  };
}

/** Runs `fn` in the context `m` carries: work taken up later, outside the message's handler. */
export function withMessageContext<T>(m: JsMsg, fn: () => T): T {
  return tracingOn() ? context.with(messageContext(m), fn) : fn();
}
