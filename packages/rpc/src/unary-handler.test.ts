import * as http2 from "node:http2";
import { create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, createClient, type HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter, createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import {
  BatchService,
  ContactSchema,
  ContactService,
  GetContactRequestSchema,
  GetContactResponseSchema,
  Health,
} from "@funil/contracts";
import { notFound } from "@funil/errors";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpcClient, rpcClientStats } from "./client.js";
import { describeError, REPLAYED_HEADER } from "./errors.js";
import { startRpcServer } from "./server.js";

/** A real server: the services' own client takes the lean path, every other protocol connect-node's. */
let server: Awaited<ReturnType<typeof startRpcServer>>;
let lastSignal: AbortSignal | undefined;
const contact = create(ContactSchema, {
  id: "ct_1",
  name: "Ana",
  tags: ["a"],
  status: "active",
  customFields: { plan: "pro", seats: 3 },
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
});

beforeAll(async () => {
  server = await startRpcServer({
    port: 0,
    log: pino({ level: "silent" }),
    routes: (router) =>
      router.service(ContactService, {
        async getContact(req, ctx: HandlerContext) {
          if (req.id === "slow") {
            lastSignal = ctx.signal;
            await new Promise((r) => setTimeout(r, 300));
          }
          if (req.id === "missing") throw notFound("contact");
          if (req.id === "replayed") ctx.responseHeader.set(REPLAYED_HEADER, "true");
          return { contact: { ...contact, id: req.id } };
        },
      }),
  });
});
afterAll(async () => {
  await server?.close();
});

const url = () => `http://127.0.0.1:${server.port}`;

describe("lean Connect unary path (per-call allocations)", () => {
  it("answers the services' client exactly as connect-node answers gRPC and Connect JSON", async () => {
    const lean = await rpcClient(ContactService, url()).getContact({ workspaceId: "ws", id: "ct_1" });
    const grpc = await createClient(ContactService, createGrpcTransport({ baseUrl: url() })).getContact({
      workspaceId: "ws",
      id: "ct_1",
    });
    const json = await createClient(
      ContactService,
      createConnectTransport({ baseUrl: url(), httpVersion: "2" }),
    ).getContact({ workspaceId: "ws", id: "ct_1" });
    expect(lean.contact?.customFields).toEqual({ plan: "pro", seats: 3 });
    expect(equals(GetContactResponseSchema, lean, grpc)).toBe(true);
    expect(equals(GetContactResponseSchema, lean, json)).toBe(true);
  });

  it("keeps the caller's deadline on the server: past connect-timeout-ms it answers deadline_exceeded and aborts the handler's signal", async () => {
    // A bare HTTP/2 request, so that no client-side timer decides the outcome.
    const session = http2.connect(url());
    try {
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/funil.crm.v1.ContactService/GetContact",
          "content-type": "application/proto",
          "connect-timeout-ms": "50",
        });
        let status = 0;
        let body = "";
        stream.on("response", (h) => {
          status = Number(h[":status"]);
        });
        stream.setEncoding("utf8");
        stream.on("data", (c: string) => {
          body += c;
        });
        stream.on("end", () => resolve({ status, body }));
        stream.on("error", reject);
        // GetContactRequest { id: "slow" }: field 2, length-delimited.
        stream.end(Buffer.from([0x12, 4, ...Buffer.from("slow")]));
      });
      expect(answer.status).toBe(504);
      expect(JSON.parse(answer.body)).toMatchObject({ code: "deadline_exceeded" });
      expect(lastSignal?.aborted).toBe(true);
    } finally {
      session.close();
    }
  });

  it("the client's own deadline fails the call with DeadlineExceeded", async () => {
    const err = await rpcClient(ContactService, url(), 50)
      .getContact({ workspaceId: "ws", id: "slow" })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: Code.DeadlineExceeded });
  });

  it("a call to a service that is not there fails with Unavailable, not a hang", async () => {
    const err = await rpcClient(ContactService, "http://127.0.0.1:1", 2000)
      .getContact({ workspaceId: "ws", id: "x" })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: Code.Unavailable });
  });

  it("the services' client is unary only: a streaming method fails Unimplemented at once, no second transport is built for it", async () => {
    // Nothing listens there: the call never leaves the process.
    const health = rpcClient(Health, "http://127.0.0.1:1");
    const watch = async () => {
      for await (const _ of health.watch({ service: "" })) return "answered";
    };
    await expect(watch()).rejects.toMatchObject({ code: Code.Unimplemented, rawMessage: /unary only/ });
  });
});

describe("calls made in one turn share one stream (BatchService)", () => {
  const batchOf = async <T>(calls: () => Promise<T>[]) => {
    const before = { ...rpcClientStats };
    const results = await Promise.allSettled(calls());
    return {
      results,
      calls: rpcClientStats.calls - before.calls,
      batches: rpcClientStats.batches - before.batches,
      streams: rpcClientStats.streams - before.streams,
    };
  };

  it("twenty concurrent calls travel in one stream and each gets its own answer, error and headers", async () => {
    const client = rpcClient(ContactService, url());
    const replayed: string[] = [];
    const { results, calls, streams } = await batchOf(() => [
      ...Array.from({ length: 18 }, (_, i) => client.getContact({ workspaceId: "ws", id: `ct_${i}` })),
      client.getContact({ workspaceId: "ws", id: "missing" }),
      client.getContact(
        { workspaceId: "ws", id: "replayed" },
        { onHeader: (h) => replayed.push(h.get(REPLAYED_HEADER) ?? "") },
      ),
    ]);
    expect(calls).toBe(20);
    expect(streams).toBe(1);
    for (let i = 0; i < 18; i++)
      expect(results[i]).toMatchObject({ status: "fulfilled", value: { contact: { id: `ct_${i}` } } });
    const missing = results[18] as PromiseRejectedResult;
    expect(missing.reason).toMatchObject({ code: Code.NotFound });
    expect(describeError(missing.reason).code).toBe("not_found");
    expect(results[19]).toMatchObject({ status: "fulfilled", value: { contact: { id: "replayed" } } });
    expect(replayed).toEqual(["true"]);
  });

  it("a call of a batch past its own deadline fails alone; the others answer", async () => {
    const client = rpcClient(ContactService, url());
    const { results, streams } = await batchOf(() => [
      client.getContact({ workspaceId: "ws", id: "slow" }, { timeoutMs: 50 }),
      client.getContact({ workspaceId: "ws", id: "ct_a" }),
      client.getContact({ workspaceId: "ws", id: "ct_b" }),
    ]);
    expect(streams).toBe(1);
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ code: Code.DeadlineExceeded });
    expect(results[1]).toMatchObject({ status: "fulfilled", value: { contact: { id: "ct_a" } } });
    expect(results[2]).toMatchObject({ status: "fulfilled", value: { contact: { id: "ct_b" } } });
  });

  it("a cancelled call of a batch fails with Canceled; the others answer", async () => {
    const client = rpcClient(ContactService, url());
    const abort = new AbortController();
    const { results } = await batchOf(() => {
      const calls = [
        client.getContact({ workspaceId: "ws", id: "slow" }, { signal: abort.signal }),
        client.getContact({ workspaceId: "ws", id: "ct_c" }),
      ];
      setTimeout(() => abort.abort(), 20);
      return calls;
    });
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ code: Code.Canceled });
    expect(results[1]).toMatchObject({ status: "fulfilled", value: { contact: { id: "ct_c" } } });
  });

  it("a service that does not know BatchService (an older copy) gets single calls", async () => {
    const old = http2.createServer(
      connectNodeAdapter({
        routes: (router) =>
          router.service(ContactService, { getContact: (req) => ({ contact: { ...contact, id: req.id } }) }),
      }),
    );
    await new Promise<void>((r) => old.listen(0, "127.0.0.1", r));
    try {
      const port = (old.address() as { port: number }).port;
      const client = rpcClient(ContactService, `http://127.0.0.1:${port}`);
      const first = await batchOf(() =>
        [1, 2, 3].map((i) => client.getContact({ workspaceId: "ws", id: `o${i}` })),
      );
      expect(first.results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "fulfilled"]);
      expect(first.streams).toBe(5); // the refused channel, the refused batch, then each alone
      const then = await batchOf(() =>
        [1, 2].map((i) => client.getContact({ workspaceId: "ws", id: `p${i}` })),
      );
      expect(then.results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled"]);
      expect(then.streams).toBe(2);
    } finally {
      old.close();
    }
  });

  it("the batches of successive turns travel as frames on one long-lived channel stream", async () => {
    const client = rpcClient(ContactService, url());
    const first = await batchOf(() =>
      [1, 2].map((i) => client.getContact({ workspaceId: "ws", id: `c${i}` })),
    );
    const second = await batchOf(() =>
      [3, 4, 5].map((i) => client.getContact({ workspaceId: "ws", id: `c${i}` })),
    );
    const alone = await batchOf(() => [client.getContact({ workspaceId: "ws", id: "c6" })]);
    for (const b of [first, second, alone])
      expect(b.results.every((r) => r.status === "fulfilled")).toBe(true);
    expect([first.streams, second.streams, alone.streams]).toEqual([1, 0, 0]);
    expect([first.batches, second.batches, alone.batches]).toEqual([1, 1, 1]);
    expect(
      (second.results[2] as PromiseFulfilledResult<{ contact?: { id: string } }>).value.contact?.id,
    ).toBe("c5");
  });

  it("a stopping service answers every frame it read, then ends the channel; later calls fail Unavailable, never hang", async () => {
    const stopping = await startRpcServer({
      port: 0,
      log: pino({ level: "silent" }),
      routes: (router) =>
        router.service(ContactService, {
          async getContact(req) {
            if (req.id === "slow") await new Promise((r) => setTimeout(r, 200));
            return { contact: { ...contact, id: req.id } };
          },
        }),
    });
    const client = rpcClient(ContactService, `http://127.0.0.1:${stopping.port}`, 2000);
    await client.getContact({ workspaceId: "ws", id: "warm" });
    const inFlight = client.getContact({ workspaceId: "ws", id: "slow" });
    await new Promise((r) => setTimeout(r, 50));
    const closed = stopping.close();
    expect((await inFlight).contact?.id).toBe("slow");
    await closed;
    const after = await client.getContact({ workspaceId: "ws", id: "late" }).catch((e: unknown) => e);
    expect(after).toMatchObject({ code: Code.Unavailable });
  });

  it("a channel that breaks fails the calls waiting on it with Unavailable (reads may be retried, writes are not)", async () => {
    const sessions = new Set<http2.ServerHttp2Session>();
    const breaking = http2.createServer();
    breaking.on("session", (s) => sessions.add(s));
    // Takes the channel, reads its frames, never answers, then drops the connection.
    breaking.on("stream", (stream) => {
      stream.respond({ ":status": 200, "content-type": "application/proto" });
      stream.on("data", () =>
        setTimeout(() => {
          for (const s of sessions) s.destroy();
        }, 20),
      );
    });
    await new Promise<void>((r) => breaking.listen(0, "127.0.0.1", r));
    try {
      const port = (breaking.address() as { port: number }).port;
      const client = rpcClient(ContactService, `http://127.0.0.1:${port}`, 2000);
      const errors = await Promise.all(
        [1, 2].map((i) => client.getContact({ workspaceId: "ws", id: `b${i}` }).catch((e: unknown) => e)),
      );
      for (const e of errors) expect(e).toMatchObject({ code: Code.Unavailable });
    } finally {
      breaking.close();
    }
  });

  it("any Connect or gRPC client may send a batch: a call to an unknown method or to the batch itself is answered unimplemented, a batch of more than 256 calls refused", async () => {
    const batch = createClient(BatchService, createGrpcTransport({ baseUrl: url() }));
    const input = toBinary(
      GetContactRequestSchema,
      create(GetContactRequestSchema, { workspaceId: "ws", id: "g1" }),
    );
    const res = await batch.call({
      calls: [
        { path: "/funil.crm.v1.ContactService/GetContact", input },
        { path: "/funil.crm.v1.ContactService/Nope", input },
        { path: "/funil.rpc.v1.BatchService/Call", input: new Uint8Array() },
      ],
    });
    expect(res.results.map((r) => r.status)).toEqual([200, 501, 501]);
    expect(fromBinary(GetContactResponseSchema, res.results[0]!.body).contact?.id).toBe("g1");
    expect(JSON.parse(Buffer.from(res.results[1]!.body).toString())).toMatchObject({ code: "unimplemented" });
    const tooMany = await batch
      .call({
        calls: Array.from({ length: 257 }, () => ({
          path: "/funil.crm.v1.ContactService/GetContact",
          input,
        })),
      })
      .catch((e: unknown) => e);
    expect(tooMany).toMatchObject({ code: Code.InvalidArgument });
  });

  it("the batch channel is the declared BatchService.Channel: Connect (the lean path) and gRPC (connect-node's) clients stream ChannelRequests and read each ChannelResponse as soon as it is done", async () => {
    const input = (id: string) =>
      toBinary(GetContactRequestSchema, create(GetContactRequestSchema, { workspaceId: "ws", id }));
    async function* requests() {
      yield { id: 1, calls: [{ path: "/funil.crm.v1.ContactService/GetContact", input: input("slow") }] };
      yield {
        id: 2,
        calls: [
          { path: "/funil.crm.v1.ContactService/GetContact", input: input("d1") },
          { path: "/funil.crm.v1.ContactService/GetContact", input: input("missing") },
        ],
      };
    }
    for (const transport of [
      createConnectTransport({ baseUrl: url(), httpVersion: "2", useBinaryFormat: true }),
      createGrpcTransport({ baseUrl: url() }),
    ]) {
      const answers = [];
      for await (const res of createClient(BatchService, transport).channel(requests())) answers.push(res);
      // The quick one first.
      expect(answers.map((a) => [a.id, a.status])).toEqual([
        [2, 200],
        [1, 200],
      ]);
      expect(answers[0]!.results.map((r) => r.status)).toEqual([200, 404]);
      expect(fromBinary(GetContactResponseSchema, answers[0]!.results[0]!.body).contact?.id).toBe("d1");
      expect(fromBinary(GetContactResponseSchema, answers[1]!.results[0]!.body).contact?.id).toBe("slow");
    }
  });
});
