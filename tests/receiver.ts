import { createHmac, timingSafeEqual } from "node:crypto";
import * as http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A webhook receiver on loopback for the tests: each path answers as told
 * (200, 200 with a 5 000-byte body, 500, 302, 301, hangs, or is down: the
 * connection is dropped unanswered), and every request is kept with its raw body.
 * Signatures are checked here with node:crypto, not with the package under
 * test.
 */
export type Mode = "ok" | "big" | "fail" | "redirect" | "moved" | "hang" | "down";

export interface Received {
  path: string;
  at: number;
  headers: http.IncomingHttpHeaders;
  raw: string;
  /** What the receiver answered (0: it hung, or was down). */
  status: number;
  /** When a request that hung was given up by its sender (its connection closed). */
  abandonedAt?: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies
  body: any;
}

export async function startReceiver() {
  const received: Received[] = [];
  const modes = new Map<string, Mode>();
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const path = req.url ?? "/";
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {}
      const mode = modes.get(path) ?? "ok";
      const status = { ok: 200, big: 200, fail: 500, redirect: 302, moved: 301, hang: 0, down: 0 }[mode];
      const entry: Received = { path, at: Date.now(), headers: req.headers, raw, body, status };
      received.push(entry);
      if (mode === "down") {
        req.socket.destroy();
        return;
      }
      if (mode === "hang") {
        hanging.add(res);
        res.once("close", () => {
          hanging.delete(res);
          entry.abandonedAt = Date.now();
        });
        return;
      }
      if (mode === "redirect" || mode === "moved") res.writeHead(status, { location: `${path}-moved` }).end();
      else res.writeHead(status).end(mode === "big" ? "x".repeat(5_000) : mode);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (path: string, mode: Mode = "ok") => {
      modes.set(path, mode);
      return `${base}${path}`;
    },
    set: (path: string, mode: Mode) => modes.set(path, mode),
    at: (path: string) => received.filter((r) => r.path === path),
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** Independent check of x-funil-signature: some v1 is HMAC-SHA256(secret, `${t}.${raw}`). */
export function signedWith(r: Received, secret: string): boolean {
  const header = String(r.headers["x-funil-signature"] ?? "");
  const t = /(?:^|,)t=(\d+)/.exec(header)?.[1];
  if (!t) return false;
  const expected = createHmac("sha256", secret).update(`${t}.${r.raw}`).digest();
  return [...header.matchAll(/v1=([0-9a-f]{64})/g)].some((m) =>
    timingSafeEqual(expected, Buffer.from(m[1]!, "hex")),
  );
}
