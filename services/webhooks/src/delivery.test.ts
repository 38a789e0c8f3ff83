import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { asTransactionBody, CallInTransactionError } from "@funil/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpPoster } from "./delivery.js";

let server: http.Server;
let port = 0;
let hits = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    hits++;
    req.resume();
    req.on("end", () => {
      if (req.url === "/hang") return; // never answers
      if (req.url === "/big") {
        res.writeHead(200).end(Buffer.alloc(1024 * 1024, "x"));
        return;
      }
      if (req.url === "/trickle") {
        // The status comes at once, the body never ends: the status decides the attempt.
        res.writeHead(200, { "content-type": "text/plain" }).write("still");
        return;
      }
      res.writeHead(req.url === "/moved" ? 301 : 200, { location: "/elsewhere" }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe("an attempt's POST (docs/api/webhooks.md §What a receiver gets)", () => {
  it("docs/api/webhooks.md §Subscription: at each attempt a private address is refused, also behind a name (checked when connecting)", async () => {
    const poster = httpPoster({ timeoutMs: 2000, allowPrivate: false });
    const before = hits;
    const literal = await poster.post(`http://127.0.0.1:${port}/hook`, "{}", {});
    expect(literal).toEqual({ ok: false, error: "refused target: 127.0.0.1 is loopback" });
    const named = await poster.post(`http://localhost:${port}/hook`, "{}", {});
    expect(named.ok).toBe(false);
    expect(named.error).toMatch(/^refused target: localhost resolves to (127\.0\.0\.1|::1), loopback$/);
    expect(hits).toBe(before);
    await poster.close();
  });

  it("docs/api/webhooks.md §Retries 1: with private targets allowed the POST goes out; a redirect is a failure, not followed", async () => {
    const poster = httpPoster({ timeoutMs: 2000, allowPrivate: true });
    expect(await poster.post(`http://localhost:${port}/hook`, "{}", {})).toEqual({ ok: true, status: 200 });
    const before = hits;
    expect(await poster.post(`http://127.0.0.1:${port}/moved`, "{}", {})).toEqual({
      ok: false,
      status: 301,
      error: "redirect 301 not followed",
    });
    expect(hits).toBe(before + 1);
    await poster.close();
  });

  it("docs/api/webhooks.md §Retries 1: a receiver that does not answer within the timeout fails with a timeout; a status that comes in time decides at once, whatever the body does", async () => {
    const poster = httpPoster({ timeoutMs: 600, allowPrivate: true });
    const started = performance.now();
    expect(await poster.post(`http://127.0.0.1:${port}/hang`, "{}", {})).toEqual({
      ok: false,
      error: "timeout after 600 ms",
    });
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(590);
    expect(took).toBeLessThan(2_500);
    const trickle = performance.now();
    // The attempt log keeps what of the body came with the status, and does not wait for the rest.
    expect(await poster.post(`http://127.0.0.1:${port}/trickle`, "{}", {})).toEqual({
      ok: true,
      status: 200,
      body: "still",
    });
    expect(performance.now() - trickle).toBeLessThan(500);
    // Of a 1 MiB answer, the first 1 KB.
    expect(await poster.post(`http://127.0.0.1:${port}/big`, "{}", {})).toEqual({
      ok: true,
      status: 200,
      body: "x".repeat(1024),
    });
    expect(await poster.post(`http://127.0.0.1:${port}/hook`, "{}", {})).toEqual({ ok: true, status: 200 });
    await poster.close();
  });
});

describe("no HTTP while a transaction is open (docs/architecture.md §Rules that keep it real)", () => {
  it("a POST started inside a PostgreSQL transaction's callback is refused, and never sent", async () => {
    const poster = httpPoster({ timeoutMs: 2000, allowPrivate: true });
    const before = hits;
    expect(() => asTransactionBody(() => poster.post(`http://127.0.0.1:${port}/hook`, "{}", {}))).toThrow(
      CallInTransactionError,
    );
    expect(hits).toBe(before);
    await poster.close();
  });
});
