import * as http2 from "node:http2";
import type { Socket } from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ContactService, UtmSchema } from "@funil/contracts";
import { postgres } from "@funil/db";
import { fail } from "@funil/errors";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpcClient } from "./client.js";
import { describeError } from "./errors.js";
import { wireOf } from "./json.js";
import { startRpcServer } from "./server.js";

/** A real Connect server on HTTP/2 whose handlers fail on purpose; the client is the one services use. */
const calls = { list: 0, upsert: 0 };
let failures = 0;
let server: Awaited<ReturnType<typeof startRpcServer>>;

beforeAll(async () => {
  server = await startRpcServer({
    port: 0,
    log: pino({ level: "silent" }),
    routes: (router) =>
      router.service(ContactService, {
        async listContacts(req) {
          calls.list++;
          if (req.workspaceId === "slow") await new Promise((r) => setTimeout(r, 500));
          if (req.workspaceId === "leak") throw new Error('relation "contacts" does not exist at 10.0.0.7');
          if (failures-- > 0) throw new ConnectError("warming up", Code.Unavailable);
          return { data: [] };
        },
        async upsertContact() {
          calls.upsert++;
          if (failures-- > 0) throw new ConnectError("warming up", Code.Unavailable);
          throw fail("contact_conflict", "taken");
        },
      }),
  });
});
afterAll(async () => {
  await server?.close();
});

const client = () => rpcClient(ContactService, `http://127.0.0.1:${server.port}`, 200);

describe("service client (deadline, retries on unavailable)", () => {
  it("retries a read (NO_SIDE_EFFECTS) that met an unavailable service", async () => {
    calls.list = 0;
    failures = 2;
    await expect(client().listContacts({ workspaceId: "ws" })).resolves.toMatchObject({ data: [] });
    expect(calls.list).toBe(3);
  });

  it("never sends a write twice", async () => {
    calls.upsert = 0;
    failures = 1;
    await expect(client().upsertContact({ workspaceId: "ws" })).rejects.toMatchObject({
      code: Code.Unavailable,
    });
    expect(calls.upsert).toBe(1);
  });

  it("a call past its deadline fails, and the gateway shows it as 503 unavailable", async () => {
    const err = await client()
      .listContacts({ workspaceId: "slow" })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: Code.DeadlineExceeded });
    expect(describeError(err)).toMatchObject({ status: 503, code: "unavailable" });
  });

  it("a stable error code crosses the wire; an unexpected error leaks nothing", async () => {
    failures = 0;
    const conflict = await client()
      .upsertContact({ workspaceId: "ws" })
      .catch((e: unknown) => e);
    expect(describeError(conflict)).toMatchObject({
      status: 409,
      code: "contact_conflict",
      message: "taken",
    });
    const leak = await client()
      .listContacts({ workspaceId: "leak" })
      .catch((e: unknown) => e);
    expect(leak).toMatchObject({ code: Code.Internal, rawMessage: "internal error" });
    expect(describeError(leak)).toEqual({ code: "internal", status: 500, message: "internal error" });
  });
});

describe("docs/api/conventions.md §Outages and retries (503 unavailable): every way a service can fail mid-request is a 503, never a 500", () => {
  /** An HTTP/2 server that accepts the call, then fails the way a dying process does. */
  async function dyingServer(fail: (stream: http2.ServerHttp2Stream, socket: Socket) => void) {
    const srv = http2.createServer();
    const sockets: Socket[] = [];
    srv.on("connection", (socket: Socket) => sockets.push(socket));
    srv.on("stream", (stream) => {
      stream.on("error", () => {});
      fail(stream, sockets.at(-1) as Socket);
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
    const port = (srv.address() as { port: number }).port;
    return {
      port,
      close: () => {
        for (const s of sockets) s.destroy();
        return new Promise<void>((r) => srv.close(() => r()));
      },
    };
  }

  it.each([
    [
      "the process dies: the connection is reset",
      (_: http2.ServerHttp2Stream, socket: Socket) => socket.resetAndDestroy(),
    ],
    ["the connection closes", (_: http2.ServerHttp2Stream, socket: Socket) => socket.destroy()],
    [
      "the stream is cut (RST_STREAM)",
      (st: http2.ServerHttp2Stream) => st.close(http2.constants.NGHTTP2_INTERNAL_ERROR),
    ],
    ["the session goes away (GOAWAY)", (st: http2.ServerHttp2Stream) => st.session?.destroy()],
    [
      "headers came, then the connection died",
      (st: http2.ServerHttp2Stream, socket: Socket) => {
        st.respond({ ":status": 200, "content-type": "application/grpc" });
        setTimeout(() => socket.resetAndDestroy(), 20);
      },
    ],
  ])("%s → 503 unavailable", async (_, fail) => {
    const dying = await dyingServer(fail);
    try {
      const started = Date.now();
      const err = await rpcClient(ContactService, `http://127.0.0.1:${dying.port}`, 5000)
        .upsertContact({ workspaceId: "ws" })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectError);
      expect(describeError(err)).toMatchObject({ status: 503, code: "unavailable" });
      // At once, not at the deadline.
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await dying.close();
    }
  });

  it("a refused connection → 503 unavailable", async () => {
    const err = await rpcClient(ContactService, "http://127.0.0.1:9", 2000)
      .upsertContact({ workspaceId: "ws" })
      .catch((e: unknown) => e);
    expect(describeError(err)).toMatchObject({ status: 503, code: "unavailable" });
  });

  it("a store connection lost inside a handler → 503 unavailable; a bug stays a 500", async () => {
    const lost = Object.assign(new Error("write CONNECTION_CLOSED 127.0.0.1:5432"), {
      code: "CONNECTION_CLOSED",
    });
    expect(describeError(lost)).toMatchObject({ status: 503, code: "unavailable" });
    expect(
      describeError(Object.assign(new Error("terminating connection"), { code: "57P01" })),
    ).toMatchObject({
      status: 503,
    });
    expect(describeError(new TypeError("x is undefined"))).toMatchObject({ status: 500, code: "internal" });
  });

  it("docs/api/conventions.md §Outages and retries: a transaction PostgreSQL aborts for a deadlock → 503 unavailable (rolled back whole: retry), never a 500", async () => {
    const server = postgres(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres", {
      max: 2,
      onnotice: () => {},
    });
    try {
      // Two transactions take two advisory locks in opposite orders: PostgreSQL aborts one of them.
      const a = 7_301_001 + Math.floor(Math.random() * 1e6) * 10;
      const b = a + 1;
      let bothHoldOne!: () => void;
      let held = 0;
      const first = new Promise<void>((r) => {
        bothHoldOne = r;
      });
      const take = (mine: number, theirs: number) =>
        server.begin(async (tx) => {
          await tx`select pg_advisory_xact_lock(${mine})`;
          if (++held === 2) bothHoldOne();
          await first;
          await tx`select pg_advisory_xact_lock(${theirs})`;
        });
      const outcomes = await Promise.allSettled([take(a, b), take(b, a)]);
      const failed = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason] : []));
      expect(failed).toHaveLength(1);
      expect((failed[0] as { code?: string }).code).toBe("40P01");
      expect(describeError(failed[0])).toMatchObject({ status: 503, code: "unavailable" });
    } finally {
      await server.end({ timeout: 5 });
    }
  });
});

describe("wireOf (docs/architecture.md §Style: each write encoded once)", () => {
  it("a written record is turned into its message once, shared by its JSON and the reply", () => {
    let calls = 0;
    const wire = wireOf(UtmSchema, (r: { source: string }) => {
      calls++;
      return create(UtmSchema, { source: r.source });
    });
    const written = { source: "google" };
    expect(wire.json(written)).toEqual({
      source: "google",
      medium: null,
      campaign: null,
      term: null,
      content: null,
    });
    expect(wire.json(written)).toBe(wire.json(written));
    expect(wire.proto(written).source).toBe("google");
    expect(calls).toBe(1);
    const read = { source: "lp" };
    wire.proto(read);
    wire.proto(read);
    expect(calls).toBe(3);
  });
});
