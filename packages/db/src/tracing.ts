import {
  context,
  extractContext,
  SpanKind,
  SpanStatusCode,
  sampled,
  trace,
  traceHeaders,
  tracer,
  tracingOn,
} from "@funil/telemetry";
import type { Sql } from "./client.js";

/**
 * A statement's span name: its first words with the whitespace folded (`select id, name from`, `insert
 * into outbox`), taken from the template's text before its first parameter, so never a value.
 */
export function statementName(text: string): string {
  const words = text.trim().split(/\s+/).slice(0, 4).join(" ");
  return words.length > 60 ? words.slice(0, 60) : words || "statement";
}

/**
 * The pool as it is when tracing is off; on, a proxy that gives each statement run inside a sampled span
 * a CLIENT span of its own (begin's and savepoint's transactions too). The span starts when the query is
 * awaited, so a fragment nested in another query gets none; a failing statement is an error span.
 */
export function traced(sql: Sql): Sql {
  return tracingOn() ? wrap(sql) : sql;
}

type Fn = (...args: unknown[]) => unknown;

function wrap<T extends Fn>(sql: T): T {
  return new Proxy(sql, {
    apply(target, thisArg, args: unknown[]) {
      const result = Reflect.apply(target, thisArg, args);
      const strings = args[0] as { raw?: unknown } | undefined;
      // Outside a sampled span (most requests, at a ratio) the statement is left as it is.
      if (Array.isArray(strings) && strings.raw && sampled(context.active()))
        watch(result, statementName(String(strings[0])));
      return result;
    },
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      if (prop === "begin" || prop === "savepoint")
        return (...args: unknown[]) => {
          const fn = args[args.length - 1] as Fn;
          args[args.length - 1] = (tx: Fn) => fn(wrap(tx));
          return (value as Fn).apply(target, args);
        };
      if (prop === "unsafe")
        return (...args: unknown[]) => {
          const result = (value as Fn).apply(target, args);
          if (sampled(context.active())) watch(result, statementName(String(args[0])));
          return result;
        };
      return value;
    },
  });
}

/** Opens the statement's span the first time it is awaited, and ends it with the statement. */
function watch(query: unknown, name: string) {
  if (typeof (query as PromiseLike<unknown> | undefined)?.then !== "function") return;
  const q = query as PromiseLike<unknown>;
  const then = q.then;
  let watched = false;
  const watchedThen = function (this: PromiseLike<unknown>, ...args: Parameters<typeof then>) {
    if (!watched) {
      watched = true;
      const active = context.active();
      if (sampled(active)) {
        const span = tracer().startSpan(
          name,
          { kind: SpanKind.CLIENT, attributes: { "db.system.name": "postgresql", "db.query.summary": name } },
          active,
        );
        then.call(
          this,
          () => span.end(),
          () => {
            span.setStatus({ code: SpanStatusCode.ERROR });
            span.end();
          },
        );
      }
    }
    return then.apply(this, args) as never;
  };
  // biome-ignore lint/suspicious/noThenProperty: the query stays the thenable it is, this step before its own then
  Object.defineProperty(q, "then", { value: watchedThen, configurable: true, writable: true });
}

/**
 * An outbox row's publish, as a PRODUCER span child of the write that made the row (its stored
 * traceparent), whose own context is the one the message carries: its consumers are children of the
 * relay's step, so the wait in the outbox shows in the trace. A row not traced, or traced unsampled, is
 * sent with its traceparent as stored and no span.
 */
export function publishTraced(
  traceparent: string | null,
  subject: string,
  send: (traceparent: string | undefined) => Promise<void>,
): Promise<void> {
  if (!traceparent || !tracingOn()) return send(traceparent ?? undefined);
  const parent = extractContext({ traceparent });
  if (!sampled(parent)) return send(traceparent);
  const span = tracer().startSpan(
    "outbox publish",
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        "messaging.system": "nats",
        "messaging.operation.type": "send",
        "messaging.destination.name": subject,
      },
    },
    parent,
  );
  return send(traceHeaders(trace.setSpan(parent, span))?.traceparent).then(
    () => span.end(),
    (err: unknown) => {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      throw err;
    },
  );
}
