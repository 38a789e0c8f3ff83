import { baseEnv, loadConfig } from "@funil/config";
import { describe, expect, it } from "vitest";
import { type ServiceConfig, streamMaxAges } from "./startup.js";

const config = (env: Record<string, string>) =>
  ({ ...loadConfig(baseEnv, env), HOST: "127.0.0.1" }) as unknown as ServiceConfig;

describe("retention settings (docs/operations.md §Retention)", () => {
  it("each stream gets its own max age, 7 days by default", () => {
    expect(streamMaxAges(config({ INGEST_MAX_AGE_MS: "60000" }))).toEqual({
      EVENTS: 604_800_000,
      INGEST: 60_000,
      PLATFORM: 604_800_000,
      WEBHOOK_DELIVERIES: 604_800_000,
    });
  });

  it("an inbox kept for less time than a stream keeps a message is refused, naming both settings", () => {
    expect(() =>
      streamMaxAges(config({ EVENTS_MAX_AGE_MS: "864000000", INBOX_RETENTION_MS: "86400000" })),
    ).toThrow(/INBOX_RETENTION_MS \(86400000\) must be at least the longest stream max age \(864000000\)/);
  });
});
