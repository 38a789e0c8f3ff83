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
export const unsampledTraceparent = () => false;
export const outgoingTraceHeaders = () => undefined;
// The traceparent header's form is the package's own rule, pure and the same with tracing on or off:
// taken from its build (by path, which the hook does not redirect), which installs nothing when imported.
export { traceparentOf } from "../../packages/telemetry/dist/index.js";
