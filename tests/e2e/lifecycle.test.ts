import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { describe, expect, inject, it } from "vitest";

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

function run(script: string, env: Record<string, string>) {
  const child = spawn("node", [script], {
    env: { ...process.env, FUNIL_ENV: inject("funilEnv"), LOG_LEVEL: "info", ...env },
  });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, output: () => output };
}

describe("processes (DESIGN: configuration and shutdown)", () => {
  it("a bad environment value stops the process with a message naming the variable", async () => {
    const p = run("services/crm/dist/main.js", { CRM_PORT: "not-a-port" });
    expect(await p.exited).toBe(1);
    expect(p.output()).toMatch(/CRM_PORT/);
  });

  it("SIGTERM stops a service cleanly (exit 0)", async () => {
    const port = await freePort();
    const p = run("services/crm/dist/main.js", { CRM_PORT: String(port) });
    const deadline = Date.now() + 20_000;
    while (!p.output().includes("crm listening") && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(p.output()).toContain("crm listening");
    p.child.kill("SIGTERM");
    expect(await p.exited).toBe(0);
  });
});
