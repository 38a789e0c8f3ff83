import { describe, expect, it } from "vitest";
// @ts-expect-error: plain ESM module without types, loaded by bench:tracing in place of this package
import * as noop from "../../../bench/noop-telemetry/index.mjs";
import * as telemetry from "./index.js";

describe("bench:tracing's build without tracing (bench/noop-telemetry)", () => {
  it("exports every name this package exports, so that every process of that build starts", () => {
    const missing = Object.keys(telemetry).filter((name) => !(name in noop));
    expect(missing).toEqual([]);
  });
});
