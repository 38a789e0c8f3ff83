import * as sdk from "@opentelemetry/sdk-trace";
import { afterEach, describe, expect, it } from "vitest";
import {
  context,
  extractContext,
  outgoingTraceHeaders,
  samplerOf,
  samplerSpec,
  startTracing,
  stopTracing,
  traceparentOf,
  tracingSettings,
  unsampledByParent,
  unsampledTraceparent,
} from "./index.js";
import { SampledContextManager } from "./sampled-context.js";

const sampler = (name: string | undefined, arg: string | undefined) => samplerOf(sdk, samplerSpec(name, arg));

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" };

describe("tracing settings (the standard OTEL_* variables)", () => {
  it("is off without an endpoint, so that nothing is started nor paid for", () => {
    expect(tracingSettings("crm", {})).toBeUndefined();
    expect(tracingSettings("crm", { OTEL_EXPORTER_OTLP_ENDPOINT: " " })).toBeUndefined();
  });

  it("is off when OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER none, endpoint or not", () => {
    expect(tracingSettings("crm", { ...ENDPOINT, OTEL_SDK_DISABLED: "TRUE" })).toBeUndefined();
    expect(tracingSettings("crm", { ...ENDPOINT, OTEL_TRACES_EXPORTER: "none" })).toBeUndefined();
    expect(tracingSettings("crm", { ...ENDPOINT, OTEL_SDK_DISABLED: "false" })).toBeDefined();
  });

  it("is on with the traces endpoint alone", () => {
    expect(
      tracingSettings("crm", { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" }),
    ).toBeDefined();
  });

  it("names the service after the process unless OTEL_SERVICE_NAME says otherwise", () => {
    expect(tracingSettings("gateway", ENDPOINT)?.serviceName).toBe("gateway");
    expect(tracingSettings("gateway", { ...ENDPOINT, OTEL_SERVICE_NAME: "edge" })?.serviceName).toBe("edge");
  });

  it("reads the batch delay, 5 s by default", () => {
    expect(tracingSettings("crm", ENDPOINT)?.scheduleDelayMs).toBe(5000);
    expect(tracingSettings("crm", { ...ENDPOINT, OTEL_BSP_SCHEDULE_DELAY: "100" })?.scheduleDelayMs).toBe(
      100,
    );
    expect(() => tracingSettings("crm", { ...ENDPOINT, OTEL_BSP_SCHEDULE_DELAY: "soon" })).toThrow(
      /OTEL_BSP_SCHEDULE_DELAY/,
    );
  });
});

describe("sampler", () => {
  it("is parent-based with a ratio by default, the whole trace kept or dropped by its first process", () => {
    const byDefault = sampler(undefined, "0.1");
    expect(byDefault).toBeInstanceOf(sdk.ParentBasedSampler);
    expect(byDefault.toString()).toContain("TraceIdRatioBased{0.1}");
    expect(sampler(undefined, undefined).toString()).toContain("TraceIdRatioBased{1}");
  });

  it("takes the names the specification gives", () => {
    expect(sampler("always_on", undefined)).toBeInstanceOf(sdk.AlwaysOnSampler);
    expect(sampler("traceidratio", "0.5")).toBeInstanceOf(sdk.TraceIdRatioBasedSampler);
    expect(sampler("parentbased_always_off", undefined).toString()).toContain("root=AlwaysOffSampler");
  });

  it("refuses an unknown sampler or a ratio outside 0..1, naming the variable", () => {
    expect(() => samplerSpec("sometimes", undefined)).toThrow(/OTEL_TRACES_SAMPLER: unknown sampler/);
    expect(() => samplerSpec("traceidratio", "2")).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
  });
});

describe("work not sampled (docs/operations.md §Tracing: what work not sampled carries)", () => {
  afterEach(stopTracing);
  const SAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  const UNSAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
  // A port nothing listens on: nothing is exported in these tests.
  const env = (sampler: string) => ({
    ...ENDPOINT,
    OTEL_TRACES_SAMPLER: sampler,
    OTEL_TRACES_SAMPLER_ARG: "0.1",
  });

  it("with a parent-based sampler: a caller's decision not to sample is skipped at once, and what is sent without a context says not sampled, under ids of its own", async () => {
    await startTracing("crm", env("parentbased_traceidratio"));
    expect(unsampledByParent(extractContext({ traceparent: UNSAMPLED }))).toBe(true);
    expect(unsampledByParent(extractContext({ traceparent: SAMPLED }))).toBe(false);
    expect(unsampledByParent(extractContext({}))).toBe(false);
    expect(unsampledByParent(extractContext({ traceparent: "00-zz-01" }))).toBe(false);
    const a = outgoingTraceHeaders(context.active())?.traceparent;
    const b = outgoingTraceHeaders(context.active())?.traceparent;
    expect(a).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    expect(b).not.toBe(a);
    expect(outgoingTraceHeaders(extractContext({ traceparent: SAMPLED }))).toEqual({ traceparent: SAMPLED });
  });

  it("a traceparent not sampled is known from its text, as the propagator would read it; a malformed or invalid one is not", async () => {
    await startTracing("crm", env("parentbased_traceidratio"));
    expect(unsampledTraceparent(UNSAMPLED)).toBe(true);
    // The flags are a hex byte: 0x0a has the sampled bit off, 0x0b on.
    expect(unsampledTraceparent(`${UNSAMPLED.slice(0, -2)}0a`)).toBe(true);
    expect(unsampledTraceparent(`${UNSAMPLED.slice(0, -2)}0b`)).toBe(false);
    expect(unsampledTraceparent(SAMPLED)).toBe(false);
    // Not in the exact form (these go the whole way, the propagator's reading, which may still skip them).
    for (const value of [undefined, "", [UNSAMPLED], `${UNSAMPLED} `, UNSAMPLED.toUpperCase()])
      expect(unsampledTraceparent(value)).toBe(false);
    // Ids of all zeros, another version: never read as a caller's decision.
    for (const value of [
      `00-${"0".repeat(32)}-b7ad6b7169203331-00`,
      `00-0af7651916cd43dd8448eb211c80319c-${"0".repeat(16)}-00`,
      "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
    ]) {
      expect(unsampledTraceparent(value)).toBe(false);
      expect(unsampledByParent(extractContext({ traceparent: value }))).toBe(false);
    }
    // The fast reading and the whole way agree on every well-formed one.
    for (const value of [UNSAMPLED, `${UNSAMPLED.slice(0, -2)}0a`, SAMPLED])
      expect(unsampledTraceparent(value)).toBe(unsampledByParent(extractContext({ traceparent: value })));
  });

  it("the ids sent for work not sampled are valid, distinct call after call, and say not sampled", async () => {
    await startTracing("crm", env("parentbased_traceidratio"));
    const sent = Array.from({ length: 1000 }, () => outgoingTraceHeaders(context.active())?.traceparent);
    expect(new Set(sent).size).toBe(1000);
    for (const traceparent of sent) {
      expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
      expect(unsampledTraceparent(traceparent)).toBe(true);
    }
  });

  it("off, or with a sampler that does not follow its parent, no traceparent is skipped by its text", async () => {
    expect(unsampledTraceparent(UNSAMPLED)).toBe(false);
    await startTracing("crm", env("traceidratio"));
    expect(unsampledTraceparent(UNSAMPLED)).toBe(false);
  });

  it("with another sampler every context follows its work (AsyncLocalStorage), and nothing is sent without one", async () => {
    await startTracing("crm", env("traceidratio"));
    expect(unsampledByParent(extractContext({ traceparent: UNSAMPLED }))).toBe(false);
    expect(outgoingTraceHeaders(context.active())).toBeUndefined();
    const kept = await context.with(extractContext({ traceparent: UNSAMPLED }), async () => {
      await new Promise((r) => setTimeout(r, 1));
      return outgoingTraceHeaders(context.active());
    });
    expect(kept).toEqual({ traceparent: UNSAMPLED });
  });

  it("the parent-based samplers get the manager that carries sampled work only", async () => {
    await startTracing("crm", env("parentbased_always_on"));
    const ctx = extractContext({ traceparent: SAMPLED });
    const carried = await context.with(ctx, async () => {
      await new Promise((r) => setTimeout(r, 1));
      return context.active();
    });
    expect(carried).toBe(ctx);
    const lost = await context.with(extractContext({ traceparent: UNSAMPLED }), async () => {
      await new Promise((r) => setTimeout(r, 1));
      return outgoingTraceHeaders(context.active())?.traceparent;
    });
    expect(lost).toMatch(/-00$/);
    expect(lost).not.toBe(UNSAMPLED);
    expect(new SampledContextManager().active()).toBe(context.active());
  });

  it("an origin keeps a traceparent only in its form: 55 characters of version, trace, span and flags", () => {
    expect(traceparentOf(SAMPLED)).toBe(SAMPLED);
    for (const bad of [undefined, null, "", "00-xyz", `${SAMPLED} `, SAMPLED.toUpperCase(), `${SAMPLED}-00`])
      expect(traceparentOf(bad)).toBeUndefined();
  });
});
