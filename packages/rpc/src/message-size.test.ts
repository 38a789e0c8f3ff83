import * as http2 from "node:http2";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ContactService } from "@funil/contracts";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHANNEL_PATH } from "./channel.js";
import { rpcClient, rpcClientStats } from "./client.js";
import { startRpcServer } from "./server.js";

const LIMIT = 64 * 1024;
/** Calls the implementation ran, and their request sizes. */
const ran: number[] = [];
let server: Awaited<ReturnType<typeof startRpcServer>>;

beforeAll(async () => {
  server = await startRpcServer({
    port: 0,
    log: pino({ level: "silent" }),
    maxMessageBytes: LIMIT,
    routes: (router) =>
      router.service(ContactService, {
        // id "big:<n>": an answer with n bytes of notes.
        async getContact(req) {
          ran.push(req.workspaceId.length);
          const size = req.id.startsWith("big:") ? Number(req.id.slice(4)) : 0;
          return { contact: { id: req.id, status: "active", tags: [], notes: "n".repeat(size) } };
        },
      }),
  });
});
afterAll(async () => {
  await server?.close();
});

const url = () => `http://127.0.0.1:${server.port}`;
const get = (client: ReturnType<typeof rpcClient<typeof ContactService>>, workspaceBytes: number, id = "c") =>
  client.getContact({ workspaceId: "w".repeat(workspaceBytes), id });

/** A raw HTTP/2 exchange: what the server answers, and whether it answered before the body was all sent. */
async function rawCall(
  path: string,
  headers: http2.OutgoingHttpHeaders,
  write: (s: http2.ClientHttp2Stream) => void,
) {
  const session = http2.connect(url());
  try {
    return await new Promise<{ status: number; body: Buffer; rstCode: number | undefined }>(
      (resolve, reject) => {
        const stream = session.request({ ":method": "POST", ":path": path, ...headers });
        let status = 0;
        const chunks: Buffer[] = [];
        stream.on("response", (h) => {
          status = Number(h[":status"]);
        });
        stream.on("data", (c: Buffer) => chunks.push(c));
        stream.on("close", () => resolve({ status, body: Buffer.concat(chunks), rstCode: stream.rstCode }));
        stream.on("error", reject);
        write(stream);
      },
    );
  } finally {
    session.close();
  }
}

describe("RPC_MAX_MESSAGE_BYTES on the server", () => {
  it("a request body over the limit is answered resource_exhausted as soon as it passes it, and the rest is not read", async () => {
    const before = ran.length;
    const answer = await rawCall(
      "/funil.crm.v1.ContactService/GetContact",
      { "content-type": "application/proto" },
      (s) => {
        // 96 KiB sent, the stream left open: a server that buffered until the end would never answer.
        s.write(Buffer.alloc(96 * 1024));
      },
    );
    expect(answer.status).toBe(429);
    expect(JSON.parse(answer.body.toString())).toMatchObject({
      code: "resource_exhausted",
      message: expect.stringMatching(/request message is at least \d+ bytes, over the limit of 65536/),
    });
    expect(answer.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(ran.length).toBe(before);
  });

  it("a request whose content-length is over the limit is refused before a byte of its body is read", async () => {
    const answer = await rawCall(
      "/funil.crm.v1.ContactService/GetContact",
      { "content-type": "application/proto", "content-length": String(10 * 1024 * 1024) },
      () => {},
    );
    expect(answer.status).toBe(429);
    expect(JSON.parse(answer.body.toString())).toMatchObject({ code: "resource_exhausted" });
  });

  it("a batch-channel request announcing more than the limit ends the channel with resource_exhausted from its header", async () => {
    const head = Buffer.alloc(5);
    head.writeUInt32BE(LIMIT + 1, 1);
    const answer = await rawCall(CHANNEL_PATH, { "content-type": "application/connect+proto" }, (s) =>
      s.write(head),
    );
    expect(answer.status).toBe(200);
    // The end-of-stream envelope: [u8 0x02][u32 length][JSON].
    expect(answer.body.readUInt8(0)).toBe(2);
    expect(JSON.parse(answer.body.subarray(5).toString())).toMatchObject({
      error: { code: "resource_exhausted", message: expect.stringMatching(/over the limit of 65536/) },
    });
  });

  it("an answer over the limit is replaced by resource_exhausted; gRPC and Connect clients of connect-node's path are held to it too", async () => {
    const client = rpcClient(ContactService, url(), 5000, { maxMessageBytes: 1024 * 1024 });
    await expect(get(client, 10, `big:${LIMIT + 100}`)).rejects.toMatchObject({
      code: Code.ResourceExhausted,
      rawMessage: expect.stringMatching(/response message is \d+ bytes/),
    });
    const grpc = createClient(ContactService, createGrpcTransport({ baseUrl: url() }));
    await expect(grpc.getContact({ workspaceId: "w".repeat(LIMIT + 1), id: "c" })).rejects.toMatchObject({
      code: Code.ResourceExhausted,
    });
    await expect(grpc.getContact({ workspaceId: "w", id: `big:${LIMIT + 100}` })).rejects.toMatchObject({
      code: Code.ResourceExhausted,
    });
  });
});

describe("RPC_MAX_MESSAGE_BYTES on the client", () => {
  it("a request over the client's limit is refused before it is sent", async () => {
    const client = rpcClient(ContactService, url(), 5000, { maxMessageBytes: LIMIT });
    const before = { ran: ran.length, calls: rpcClientStats.calls };
    await expect(get(client, LIMIT + 1)).rejects.toMatchObject({
      code: Code.ResourceExhausted,
      rawMessage: expect.stringMatching(/request message is \d+ bytes, over the limit of 65536/),
    });
    expect(rpcClientStats.calls).toBe(before.calls);
    expect(ran.length).toBe(before.ran);
  });

  it("an answer over the client's limit is refused, alone or as one result of a batch whose other calls answer", async () => {
    const big = rpcClient(ContactService, url(), 5000, { maxMessageBytes: 1024 * 1024 });
    const small = rpcClient(ContactService, url(), 5000, { maxMessageBytes: LIMIT });
    // The server's own limit is 64 KiB: an answer of 60 000 bytes passes it, not a client limit of 50 000.
    expect((await get(big, 1, "big:60000")).contact?.notes).toHaveLength(60_000);
    const tiny = rpcClient(ContactService, url(), 5000, { maxMessageBytes: 50_000 });
    await expect(get(tiny, 1, "big:60000")).rejects.toMatchObject({ code: Code.ResourceExhausted });
    const [alone, other] = await Promise.allSettled([get(tiny, 1, "big:60000"), get(tiny, 1, "ok")]);
    expect(alone).toMatchObject({ status: "rejected", reason: { code: Code.ResourceExhausted } });
    expect(other).toMatchObject({ status: "fulfilled", value: { contact: { id: "ok" } } });
    expect((await get(small, 1, "ok")).contact?.id).toBe("ok");
  });

  it("the calls of one turn that together pass the limit leave in several frames, each under it, and all answer", async () => {
    const client = rpcClient(ContactService, url(), 5000, { maxMessageBytes: LIMIT });
    const before = { ran: ran.length, batches: rpcClientStats.batches };
    // Five calls of 30 000 bytes: 150 000 bytes in one turn, over a limit of 65 536 per frame.
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => get(client, 30_000, `s${i}`)));
    expect(answers.map((a) => a.contact?.id)).toEqual(["s0", "s1", "s2", "s3", "s4"]);
    expect(ran.length - before.ran).toBe(5);
    expect(rpcClientStats.batches - before.batches).toBeGreaterThanOrEqual(3);
    // A call close to the limit cannot share a frame: it goes alone on its stream.
    expect((await get(client, LIMIT - 20, "near")).contact?.id).toBe("near");
  });
});
