import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { isListening } from "../../scripts/infra.mjs";

export const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/**
 * A private nats-server (JetStream, file storage) or redis-server on a free port, that a test may
 * kill (SIGKILL) and start again on the same port and data: the machine's shared servers are never
 * touched.
 */
export async function privateServer(kind: "nats" | "redis") {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), `funil-chaos-${kind}-`));
  const args =
    kind === "nats"
      ? ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir]
      : ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir];
  const program = kind === "nats" ? "/usr/sbin/nats-server" : "redis-server";
  let child: ChildProcess | undefined;
  async function start() {
    child = spawn(program, args, { stdio: "ignore" });
    const deadline = Date.now() + 10_000;
    while (!(await isListening("127.0.0.1", port, 200))) {
      if (Date.now() > deadline) throw new Error(`${kind} did not start on ${port}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  async function kill() {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise((r) => c.once("exit", r));
    c.kill("SIGKILL");
    await gone;
  }
  await start();
  return {
    url: `${kind}://127.0.0.1:${port}`,
    /** SIGKILL, then the same server back after downMs. */
    async restart(downMs: number) {
      await kill();
      await new Promise((r) => setTimeout(r, downMs));
      await start();
    },
    kill,
    start,
    async close() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
export type PrivateServer = Awaited<ReturnType<typeof privateServer>>;
