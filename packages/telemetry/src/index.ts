import { randomBytes } from "node:crypto";
import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import type { Sampler, TracerProvider } from "@opentelemetry/sdk-trace";
import { SampledContextManager, sampled } from "./sampled-context.js";

export { type Context, context, type Span, SpanKind, SpanStatusCode, sampled, trace };

/** What tracing runs with, read from the standard OTEL_* variables (tracingSettings). */
export interface TracingSettings {
  /** The resource's service.name: OTEL_SERVICE_NAME, else the process's own name (crm, gateway…). */
  serviceName: string;
  sampler: SamplerSpec;
  /** How long finished spans wait before they are sent in one request (OTEL_BSP_SCHEDULE_DELAY, ms). */
  scheduleDelayMs: number;
}

type Env = Record<string, string | undefined>;

/**
 * The settings of a process whose name is `name`, or undefined when tracing is off: OTEL_SDK_DISABLED
 * true, OTEL_TRACES_EXPORTER none, or no OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) to send spans to. A value it cannot read throws, naming the variable.
 */
export function tracingSettings(name: string, env: Env = process.env): TracingSettings | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return undefined;
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim())
    return undefined;
  return {
    serviceName: env.OTEL_SERVICE_NAME?.trim() || name,
    sampler: samplerSpec(env.OTEL_TRACES_SAMPLER, env.OTEL_TRACES_SAMPLER_ARG),
    scheduleDelayMs: delayOf(env.OTEL_BSP_SCHEDULE_DELAY),
  };
}

const SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
] as const;

/** One of the samplers the specification names, and its ratio (used by the ratio ones). */
export interface SamplerSpec {
  name: (typeof SAMPLERS)[number];
  ratio: number;
}

/**
 * OTEL_TRACES_SAMPLER and its argument. By default parent-based with a ratio (1 when unset): a request whose
 * caller decided keeps that decision, so a trace is kept whole or not at all.
 */
export function samplerSpec(name: string | undefined, arg: string | undefined): SamplerSpec {
  const chosen = name?.trim().toLowerCase() || "parentbased_traceidratio";
  if (!(SAMPLERS as readonly string[]).includes(chosen))
    throw new Error(`OTEL_TRACES_SAMPLER: unknown sampler "${name}" (${SAMPLERS.join(", ")})`);
  return { name: chosen as SamplerSpec["name"], ratio: ratioOf(arg) };
}

function ratioOf(arg: string | undefined): number {
  if (arg === undefined || arg.trim() === "") return 1;
  const ratio = Number(arg);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1)
    throw new Error(`OTEL_TRACES_SAMPLER_ARG: "${arg}" is not a ratio between 0 and 1`);
  return ratio;
}

function delayOf(value: string | undefined): number {
  if (value === undefined || value.trim() === "") return 5000;
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < 0)
    throw new Error(`OTEL_BSP_SCHEDULE_DELAY: "${value}" is not a number of milliseconds`);
  return ms;
}

let provider: TracerProvider | undefined;
/** The ids of the traceparents sent for work not sampled; set while tracing is on with a parent-based sampler. */
let unsampledIds: UnsampledIds | undefined;

/** `bytes` random bytes in hex, not all zeros (ids of all zeros are invalid). */
function nonZeroHex(bytes: number): string {
  const b = randomBytes(bytes);
  b[0] ||= 1;
  return b.toString("hex");
}

/**
 * Ids for the traceparents of work not sampled: nothing of such work is recorded, and its callee only
 * reads the flag, so the ids need to be unique, not drawn afresh: a random prefix per process and a
 * counter. Drawing 24 random bytes and hex-encoding them per call, as the SDK's generator does, showed
 * in the profile of an RPC hop with tracing on (bench/RESULTS-rpc-calls.md, tracing off and on at 0 %).
 * The span id repeats after 2³² calls of a process; the trace id, which names the work, does not.
 */
class UnsampledIds {
  readonly #traceHigh: string;
  readonly #spanHigh: string;
  #count = 0;

  constructor() {
    this.#traceHigh = nonZeroHex(8);
    this.#spanHigh = nonZeroHex(4);
  }

  /** A traceparent of ids no other call of this process sends, with the sampled flag off. */
  traceparent(): string {
    const n = ++this.#count;
    const low = n.toString(16).padStart(16, "0");
    return `00-${this.#traceHigh}${low}-${this.#spanHigh}${low.slice(8)}-00`;
  }
}

/** Whether this process traces: the callers add their hooks and interceptors only then, so off costs nothing. */
export const tracingOn = () => provider !== undefined;

/**
 * Starts the SDK once per process, before anything makes a call: spans go to the OTLP/HTTP endpoint (the
 * exporter reads OTEL_EXPORTER_OTLP_* itself) and the W3C traceparent is the propagated format. With a
 * sampler that follows its parent (parentbased_*, the default), a sampled context follows its work across
 * async calls and one not sampled is active only synchronously (SampledContextManager: no async hook
 * while no sampled work runs); with another sampler, every context follows its work (AsyncLocalStorage).
 * Off (tracingSettings), the SDK is not even loaded (about 10 MB of modules), no async hook is installed
 * and the API stays the no-op it is by default.
 */
export async function startTracing(name: string, env: Env = process.env): Promise<void> {
  if (provider) return;
  const settings = tracingSettings(name, env);
  if (!settings) return;
  const [
    sdk,
    { OTLPTraceExporter },
    { AsyncLocalStorageContextManager },
    { W3CTraceContextPropagator },
    resources,
  ] = await Promise.all([
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/context-async-hooks"),
    import("@opentelemetry/core"),
    import("@opentelemetry/resources"),
  ]);
  if (provider) return;
  const started = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({ "service.name": settings.serviceName }),
    sampler: samplerOf(sdk, settings.sampler),
    spanProcessors: [
      new sdk.BatchSpanProcessor({
        exporter: new OTLPTraceExporter(),
        scheduledDelayMillis: settings.scheduleDelayMs,
      }),
    ],
  });
  const followsParent = settings.sampler.name.startsWith("parentbased_");
  context.setGlobalContextManager(
    followsParent ? new SampledContextManager() : new AsyncLocalStorageContextManager().enable(),
  );
  unsampledIds = followsParent ? new UnsampledIds() : undefined;
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(started);
  provider = started;
}

/** The SDK's sampler for a spec. */
export function samplerOf(sdk: typeof import("@opentelemetry/sdk-trace"), spec: SamplerSpec): Sampler {
  const ratio = () => new sdk.TraceIdRatioBasedSampler(spec.ratio);
  switch (spec.name) {
    case "always_on":
      return new sdk.AlwaysOnSampler();
    case "always_off":
      return new sdk.AlwaysOffSampler();
    case "traceidratio":
      return ratio();
    case "parentbased_always_on":
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
    case "parentbased_always_off":
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new sdk.ParentBasedSampler({ root: ratio() });
  }
}

/** Sends the spans still waiting and stops the SDK (a process's stop()); nothing when tracing is off. */
export async function stopTracing(): Promise<void> {
  const p = provider;
  if (!p) return;
  provider = undefined;
  unsampledIds = undefined;
  await p.shutdown().catch(() => undefined);
  trace.disable();
  propagation.disable();
  context.disable();
}

/** The tracer of Funil's own spans. */
export const tracer = () => trace.getTracer("funil");

/**
 * The context a request carries (its traceparent and tracestate, from a plain header object), on top of
 * no active span: a malformed traceparent is ignored, and the span started on it begins a new trace.
 */
export function extractContext(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(ROOT_CONTEXT, headers);
}

/**
 * The traceparent (and tracestate) of `ctx` as plain headers, or undefined when it holds no span: what
 * a call sends, sampled or not, so that the callee keeps the caller's decision.
 */
export function traceHeaders(ctx: Context): Record<string, string> | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent === undefined ? undefined : carrier;
}

/**
 * Whether a process whose sampler follows its parent can skip a piece of work's span at once: its caller
 * (a call's or a message's traceparent, in `parent`) decided not to sample it. No span is started and no
 * context made active for it: nothing of it would be recorded.
 */
export function unsampledByParent(parent: Context): boolean {
  return unsampledIds !== undefined && trace.getSpan(parent) !== undefined && !sampled(parent);
}

/** The ids W3C Trace Context calls invalid. */
const ZERO_TRACE_ID = "0".repeat(32);
const ZERO_SPAN_ID = "0".repeat(16);

/**
 * unsampledByParent read straight from a traceparent header, before any context is made of it: true when
 * the sampler follows its parent and `value` is a valid version-00 traceparent whose sampled flag is off.
 * Anything else (absent, malformed, another version, sampled) answers false and goes the whole way
 * (extractContext). An RPC call or a message its caller did not sample is skipped for the price of a
 * regular expression, not of the propagator's parse and a context.
 */
export function unsampledTraceparent(value: string | string[] | undefined): boolean {
  return (
    unsampledIds !== undefined &&
    typeof value === "string" &&
    value.startsWith("00-") &&
    TRACEPARENT.test(value) &&
    (Number.parseInt(value.slice(53), 16) & 1) === 0 &&
    value.slice(3, 35) !== ZERO_TRACE_ID &&
    value.slice(36, 52) !== ZERO_SPAN_ID
  );
}

/**
 * The traceparent (and tracestate) a call or a message sends from `ctx`: its own when it holds a span;
 * else, with a sampler that follows its parent, a traceparent of fresh ids with the sampled flag off
 * (work not sampled, past an `await`: SampledContextManager), so that the callee keeps the decision and
 * starts no trace of its own; else none.
 */
export function outgoingTraceHeaders(ctx: Context): Record<string, string> | undefined {
  // No span, nothing to inject: the propagator is not even asked.
  const own = trace.getSpan(ctx) === undefined ? undefined : traceHeaders(ctx);
  if (own || unsampledIds === undefined) return own;
  return { traceparent: unsampledIds.traceparent() };
}

/**
 * The active context's traceparent when tracing is on and a span is active (a write made inside a traced
 * request), for work that leaves the process later (the outbox row, then its NATS message); else undefined.
 */
export function activeTraceparent(): string | undefined {
  return provider ? traceHeaders(context.active())?.traceparent : undefined;
}

/** The traceparent header's form (W3C Trace Context, version 00): what a caller's origin may carry on. */
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** `value` when it has the form of a traceparent, else undefined (nothing else is stored or sent on). */
export const traceparentOf = (value: string | null | undefined): string | undefined =>
  value && TRACEPARENT.test(value) ? value : undefined;
