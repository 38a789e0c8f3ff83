import { type AddressInfo, createServer, type Socket } from "node:net";
import { Code } from "@connectrpc/connect";
import { ContactService } from "@funil/contracts";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { type RpcOptions, rpcAddressStats, rpcClient } from "./client.js";
import { startRpcServer } from "./server.js";
import { tcpProxy } from "./test-support.js";

/** One copy of a service on a real port: it counts the calls it ran. */
async function copy(
  opts: { port?: number; host?: string; slowMs?: number; maxConnectionAgeMs?: number } = {},
) {
  const ran = { reads: 0, writes: 0 };
  const server = await startRpcServer({
    port: opts.port ?? 0,
    host: opts.host,
    log: pino({ level: "silent" }),
    maxConnectionAgeMs: opts.maxConnectionAgeMs,
    routes: (router) =>
      router.service(ContactService, {
        async listContacts() {
          ran.reads++;
          if (opts.slowMs) await new Promise((r) => setTimeout(r, opts.slowMs));
          return { data: [] };
        },
        async upsertContact() {
          ran.writes++;
          if (opts.slowMs) await new Promise((r) => setTimeout(r, opts.slowMs));
          return { created: true };
        },
      }),
  });
  const stopped = { done: false };
  const handle = {
    port: server.port,
    url: `http://${opts.host ?? "127.0.0.1"}:${server.port}`,
    ran,
    close: async () => {
      if (stopped.done) return;
      stopped.done = true;
      await server.close();
    },
  };
  running.push(handle);
  return handle;
}
const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

const sent = (address: string) => {
  let calls = 0;
  for (const s of rpcAddressStats()) if (s.address === address) calls += s.calls;
  return calls;
};
const until = async (done: () => boolean, withinMs: number, tick: () => Promise<unknown>) => {
  const started = Date.now();
  while (!done()) {
    if (Date.now() - started > withinMs) throw new Error(`not within ${withinMs} ms`);
    await tick();
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - started;
};

const fast: RpcOptions = { resolveMs: 200, keepaliveMs: 500 };

describe("scale out: calls spread over the copies of a service", () => {
  it("3 copies behind a comma-separated <NAME>_URL each get about a third of 300 calls", async () => {
    const copies = [await copy(), await copy(), await copy()];
    const client = rpcClient(ContactService, copies.map((c) => c.url).join(", "), 5000, fast);
    // Ten turns of 30 calls: a turn's calls split over the copies, each copy's share in one batch.
    for (let turn = 0; turn < 10; turn++)
      await Promise.all(Array.from({ length: 30 }, () => client.listContacts({ workspaceId: "ws" })));
    for (const c of copies) expect(c.ran.reads).toBeGreaterThanOrEqual(80);
    expect(copies.reduce((n, c) => n + c.ran.reads, 0)).toBe(300);
  });

  it("a stopped copy: reads go to the others without one failing, a write refused at connect is sent again", async () => {
    const copies = [await copy(), await copy(), await copy()];
    const client = rpcClient(ContactService, copies.map((c) => c.url).join(","), 5000, fast);
    await Promise.all(Array.from({ length: 30 }, () => client.listContacts({ workspaceId: "ws" })));
    const gone = copies[1]!;
    await gone.close();
    const before = { ran: gone.ran.writes, sent: sent(gone.url.slice(7)) };
    const writes = await Promise.all(
      Array.from({ length: 30 }, () => client.upsertContact({ workspaceId: "ws" }).then(() => "ok")),
    );
    const reads = await Promise.all(
      Array.from({ length: 60 }, () => client.listContacts({ workspaceId: "ws" }).then(() => "ok")),
    );
    expect([...writes, ...reads].every((r) => r === "ok")).toBe(true);
    // Sent to the stopped copy, refused there, run once elsewhere.
    expect(sent(gone.url.slice(7))).toBeGreaterThan(before.sent);
    expect(gone.ran.writes).toBe(before.ran);
    expect(copies[0]!.ran.writes + copies[2]!.ran.writes).toBe(30);
  });

  it("a copy started again at its address gets calls within the probe's backoff (2 s at most)", async () => {
    const copies = [await copy(), await copy()];
    const client = rpcClient(ContactService, copies.map((c) => c.url).join(","), 5000, fast);
    const back = copies[1]!;
    await back.close();
    // Long enough for the probes' backoff to reach its most.
    const read = () => client.listContacts({ workspaceId: "ws" });
    for (let i = 0; i < 40; i++) await read();
    await new Promise((r) => setTimeout(r, 2500));
    const again = await copy({ port: back.port });
    const took = await until(() => again.ran.reads > 0, 3000, read);
    expect(took).toBeLessThan(2500);
  });

  it("a host name that starts resolving to a new address: the new copy gets calls within one resolve period", async () => {
    const first = await copy({ host: "127.0.0.1" });
    const second = await copy({ host: "127.0.0.2", port: first.port });
    let addresses = ["127.0.0.1"];
    const client = rpcClient(ContactService, `http://copies.internal:${first.port}`, 5000, {
      ...fast,
      lookup: async () => addresses,
    });
    const read = () => client.listContacts({ workspaceId: "ws" });
    for (let i = 0; i < 20; i++) await read();
    expect([first.ran.reads, second.ran.reads]).toEqual([20, 0]);
    addresses = ["127.0.0.1", "127.0.0.2"];
    const took = await until(() => second.ran.reads > 0, 1000, read);
    expect(took).toBeLessThan(200 + 100);
    // And an address that is no longer listed gets no more calls.
    addresses = ["127.0.0.2"];
    await new Promise((r) => setTimeout(r, 400));
    const before = first.ran.reads;
    for (let i = 0; i < 20; i++) await read();
    expect(first.ran.reads).toBe(before);
  });

  it("a lookup that hangs: the call fails at its deadline, not after the lookup", async () => {
    const client = rpcClient(ContactService, "http://slow-dns.internal:7001", 300, {
      ...fast,
      lookup: () => new Promise(() => {}),
    });
    const started = Date.now();
    await expect(client.upsertContact({ workspaceId: "ws" })).rejects.toMatchObject({
      code: Code.DeadlineExceeded,
    });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("a name that does not resolve fails the call Unavailable, not a 500", async () => {
    const client = rpcClient(ContactService, "http://nowhere.internal:7001", 2000, {
      ...fast,
      lookup: async () => {
        throw Object.assign(new Error("getaddrinfo ENOTFOUND nowhere.internal"), { code: "ENOTFOUND" });
      },
    });
    await expect(client.upsertContact({ workspaceId: "ws" })).rejects.toMatchObject({
      code: Code.Unavailable,
    });
  });
});

describe("scale out: connections end and die without failing calls", () => {
  it("RPC_MAX_CONNECTION_AGE_MS: the server ends an old connection by GOAWAY, every call in flight then succeeds", async () => {
    const server = await copy({ slowMs: 150, maxConnectionAgeMs: 1000 });
    const proxy = await tcpProxy(server.port);
    const client = rpcClient(ContactService, `http://127.0.0.1:${proxy.port}`, 5000, fast);
    const results: Array<Promise<string>> = [];
    const started = Date.now();
    while (Date.now() - started < 2600) {
      for (let i = 0; i < 5; i++) {
        results.push(client.listContacts({ workspaceId: "ws" }).then(() => "ok", String));
        results.push(client.upsertContact({ workspaceId: "ws" }).then(() => "ok", String));
      }
      await new Promise((r) => setTimeout(r, 30));
    }
    const all = await Promise.all(results);
    expect(all.filter((r) => r !== "ok")).toEqual([]);
    // Each write ran exactly once.
    expect(server.ran.writes).toBe(all.length / 2);
    expect(proxy.connections).toBeGreaterThanOrEqual(2);
    await proxy.close();
  });

  it("RPC_KEEPALIVE_MS: a peer that stops answering is noticed within 2 keepalive periods, not at the deadline", async () => {
    const frozen = await copy({ slowMs: 3000 });
    const proxy = await tcpProxy(frozen.port);
    const client = rpcClient(ContactService, `http://127.0.0.1:${proxy.port}`, 20_000, fast);
    await client.listContacts({ workspaceId: "ws" }).catch(() => {});
    const started = Date.now();
    const write = client.upsertContact({ workspaceId: "ws" }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    proxy.freeze();
    expect(await write).toMatchObject({ code: Code.Unavailable });
    expect(Date.now() - started).toBeLessThan(2 * 500 + 600);
    await proxy.close();
  });

  it("RPC_KEEPALIVE_MS: a copy whose port accepts connections and never answers is left out within 2 keepalive periods", async () => {
    // A process that froze before its HTTP/2 server spoke: the TCP connection opens, no SETTINGS and no
    // PING answer ever come back.
    const sockets: Socket[] = [];
    const mute = createServer((s) => sockets.push(s.on("error", () => {})));
    await new Promise<void>((r) => mute.listen(0, "127.0.0.1", () => r()));
    const healthy = await copy();
    const port = (mute.address() as AddressInfo).port;
    const client = rpcClient(ContactService, `http://127.0.0.1:${port},${healthy.url}`, 20_000, fast);
    try {
      const started = Date.now();
      const reads = await Promise.all(
        Array.from({ length: 10 }, () => client.listContacts({ workspaceId: "ws" }).then(() => "ok")),
      );
      expect(reads).toEqual(Array(10).fill("ok"));
      expect(Date.now() - started).toBeLessThan(2 * 500 + 600);
      // The probes of the mute copy open connections that never speak HTTP/2: it stays out, so writes
      // (never sent again once they may have run) all go to the copy that answers, at once.
      await new Promise((r) => setTimeout(r, 1500));
      const later = Date.now();
      const writes = await Promise.all(
        Array.from({ length: 10 }, () =>
          client.upsertContact({ workspaceId: "ws" }).then(() => "ok", String),
        ),
      );
      expect(writes).toEqual(Array(10).fill("ok"));
      expect(Date.now() - later).toBeLessThan(300);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => mute.close(r));
    }
  });

  it("a read in flight on a copy that froze is answered by another copy", async () => {
    const frozen = await copy({ slowMs: 300 });
    const healthy = await copy({ slowMs: 300 });
    const proxy = await tcpProxy(frozen.port);
    const client = rpcClient(ContactService, `http://127.0.0.1:${proxy.port},${healthy.url}`, 20_000, fast);
    await Promise.all(Array.from({ length: 4 }, () => client.listContacts({ workspaceId: "ws" })));
    const started = Date.now();
    const reads = Array.from({ length: 10 }, () =>
      client.listContacts({ workspaceId: "ws" }).then(() => "ok"),
    );
    await new Promise((r) => setTimeout(r, 50));
    proxy.freeze();
    expect(await Promise.all(reads)).toEqual(Array(10).fill("ok"));
    expect(Date.now() - started).toBeLessThan(2 * 500 + 1000);
    await proxy.close();
  });
});
