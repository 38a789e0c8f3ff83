import * as http2 from "node:http2";
import { create, equals } from "@bufbuild/protobuf";
import { Code, createClient, type HandlerContext } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { ContactSchema, ContactService, GetContactResponseSchema } from "@funil/contracts";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpcClient } from "./client.js";
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
          return { contact: { ...contact, id: req.id } };
        },
      }),
  });
});
afterAll(async () => {
  await server?.close();
});

const url = () => `http://127.0.0.1:${server.port}`;

describe("lean Connect unary path (issue 7: per-call allocations)", () => {
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
});
