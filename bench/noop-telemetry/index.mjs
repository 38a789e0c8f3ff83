// @funil/telemetry with nothing in it: the same exports, tracing never on, no SDK, no context manager.
// Only the benchmark loads it (register.mjs), as the build without tracing that "off" must match.
export { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";

export const tracingSettings = () => undefined;
export const samplerSpec = (name, arg) => ({
  name: name ?? "parentbased_traceidratio",
  ratio: Number(arg ?? 1),
});
export const samplerOf = () => undefined;
export const tracingOn = () => false;
export const startTracing = async () => {};
export const stopTracing = async () => {};
export const tracer = () => {
  throw new Error("no tracer in the no-op build");
};
export const extractContext = () => {
  throw new Error("no context in the no-op build");
};
export const traceHeaders = () => undefined;
export const sampled = () => false;
export const activeTraceparent = () => undefined;
export const unsampledByParent = () => false;
export const outgoingTraceHeaders = () => undefined;
/** As in @funil/telemetry: a value of the traceparent header's form, else undefined. */
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
export const traceparentOf = (value) => (value && TRACEPARENT.test(value) ? value : undefined);
