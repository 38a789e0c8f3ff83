import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The thread runs the built worker (dist/poster-worker.js; `npm test` builds first), so the module under
// test is the built one too.
const { threadPoster } = (await import(
  new URL("../dist/poster-thread.js", import.meta.url).href
)) as typeof import("./poster-thread.js");

let server: http.Server;
let base = "";
const seen: Array<{ url: string; signature: string | undefined; body: string }> = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.push({ url: req.url ?? "", signature: req.headers["x-funil-signature"] as string, body });
      if (req.url === "/hang") return; // never answers
      res.writeHead(req.url === "/fail" ? 500 : 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe("the POSTs' thread (threadPoster)", () => {
  it("docs/api/webhooks.md §Retries 1: POSTs asked together are sent with their headers and body, each decided on its own: 2xx, non-2xx, timeout, refused target", async () => {
    const poster = threadPoster({ timeoutMs: 500, allowPrivate: true });
    const strict = threadPoster({ timeoutMs: 500, allowPrivate: false });
    const results = await Promise.all([
      poster.post(`${base}/ok`, '{"n":1}', { "x-funil-signature": "t=1,v1=ab" }),
      poster.post(`${base}/fail`, '{"n":2}', {}),
      poster.post(`${base}/hang`, '{"n":3}', {}),
      poster.post(`${base}/ok`, '{"n":4}', {}),
      strict.post(`${base}/ok`, '{"n":5}', {}),
    ]);
    expect(results).toEqual([
      { ok: true, status: 200 },
      { ok: false, status: 500, error: "receiver answered 500" },
      { ok: false, error: "timeout after 500 ms" },
      { ok: true, status: 200 },
      { ok: false, error: "refused target: 127.0.0.1 is loopback" },
    ]);
    expect(seen.find((s) => s.body === '{"n":1}')?.signature).toBe("t=1,v1=ab");
    expect(seen.some((s) => s.body === '{"n":5}')).toBe(false);
    await Promise.all([poster.close(), strict.close()]);
  });

  it("a thread that dies fails the POSTs it held (so their attempts are handed back) and the next POST goes out on a new one", async () => {
    const poster = threadPoster({ timeoutMs: 10_000, allowPrivate: true });
    expect(await poster.post(`${base}/ok`, "{}", {})).toEqual({ ok: true, status: 200 });
    const first = poster.thread();
    expect(first).toBeDefined();
    const held = poster.post(`${base}/hang`, "{}", {});
    const failed = held.then(
      () => "answered",
      (err: Error) => err.message,
    );
    await new Promise((r) => setTimeout(r, 200)); // the POST is out, its receiver hangs
    await first!.terminate();
    expect(await failed).toMatch(/^webhook POST thread stopped/);
    expect(await poster.post(`${base}/ok`, "{}", {})).toEqual({ ok: true, status: 200 });
    expect(poster.thread()).toBeDefined();
    expect(poster.thread()).not.toBe(first);
    await poster.close();
  });

  it("after close the thread is gone and a POST is refused, not sent", async () => {
    const poster = threadPoster({ timeoutMs: 1_000, allowPrivate: true });
    expect(await poster.post(`${base}/ok`, "{}", {})).toEqual({ ok: true, status: 200 });
    const thread = poster.thread()!;
    const exited = new Promise<number>((resolve) => thread.once("exit", resolve));
    await poster.close();
    expect(await exited).toBe(0);
    const before = seen.length;
    await expect(poster.post(`${base}/ok`, "{}", {})).rejects.toThrow("closed");
    expect(seen.length).toBe(before);
  });
});
