import { AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } from "@opentelemetry/sdk-trace";
import { describe, expect, it } from "vitest";
import { samplerOf, tracingSettings } from "./index.js";

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
    const sampler = samplerOf(undefined, "0.1");
    expect(sampler).toBeInstanceOf(ParentBasedSampler);
    expect(sampler.toString()).toContain("TraceIdRatioBased{0.1}");
    expect(samplerOf(undefined, undefined).toString()).toContain("TraceIdRatioBased{1}");
  });

  it("takes the names the specification gives", () => {
    expect(samplerOf("always_on", undefined)).toBeInstanceOf(AlwaysOnSampler);
    expect(samplerOf("traceidratio", "0.5")).toBeInstanceOf(TraceIdRatioBasedSampler);
    expect(samplerOf("parentbased_always_off", undefined).toString()).toContain("root=AlwaysOffSampler");
  });

  it("refuses an unknown sampler or a ratio outside 0..1, naming the variable", () => {
    expect(() => samplerOf("sometimes", undefined)).toThrow(/OTEL_TRACES_SAMPLER: unknown sampler/);
    expect(() => samplerOf("traceidratio", "2")).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
  });
});
