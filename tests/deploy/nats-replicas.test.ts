import { spawn } from "node:child_process";
import { describe, expect, inject, it } from "vitest";

/**
 * NATS_STREAM_REPLICAS (3 in deploy/k8s) asks a JetStream cluster for that many copies of every stream.
 * Against a lone server a service must not start as if all were well, nor hang: it stops at once and
 * says which setting the server cannot honour.
 */
describe("NATS_STREAM_REPLICAS at start", () => {
  it("above 1 on a NATS server that is not clustered, a service exits at start with a message naming the setting", async () => {
    const started = Date.now();
    const child = spawn(process.execPath, ["services/crm/dist/main.js"], {
      env: {
        ...process.env,
        FUNIL_ENV: inject("funilEnv"),
        NATS_URL: inject("natsUrl"),
        CRM_PORT: "0",
        NATS_STREAM_REPLICAS: "3",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(1);
    expect(stderr).toMatch(/NATS_STREAM_REPLICAS=3: NATS cannot keep stream \S+ on 3 servers/);
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});
