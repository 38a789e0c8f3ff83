import * as sdk from "@opentelemetry/sdk-trace";
import { describe, expect, it } from "vitest";
import { samplerOf, samplerSpec, tracingSettings } from "./index.js";

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
