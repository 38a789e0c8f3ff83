import { once } from "node:events";
import * as http2 from "node:http2";
import { ContactService } from "@funil/contracts";
import { pino } from "pino";
import { describe, expect, it, vi } from "vitest";
import { rpcClient } from "./client.js";
import { startRpcServer } from "./server.js";

const MiB = 1024 * 1024;

/** The window a session's peer may fill: what the peer's SETTINGS and WINDOW_UPDATE gave it. */
const windowsOf = (s: http2.Http2Session) => ({
  stream: s.remoteSettings.initialWindowSize,
  session: s.state.remoteWindowSize,
});

describe("HTTP/2 flow control of RPC sessions (flow.ts)", () => {
  it("a service lets its caller send 1 MiB a stream and 8 MiB a session before it must wait", async () => {
    const server = await startRpcServer({
      port: 0,
      log: pino({ level: "silent" }),
      routes: (router) => router.service(ContactService, {}),
    });
    const session = http2.connect(`http://127.0.0.1:${server.port}`);
    try {
      await once(session, "remoteSettings");
      // The session's window is widened by a WINDOW_UPDATE right after the SETTINGS.
      await vi.waitFor(() => expect(windowsOf(session)).toEqual({ stream: MiB, session: 8 * MiB }));
    } finally {
      session.close();
      await server.close();
    }
  });

  it("a client lets the service answer 1 MiB a stream and 8 MiB a session before it must wait", async () => {
    const server = http2.createServer();
    const seen = new Promise<http2.Http2Session>((resolve) =>
      server.on("stream", (stream) => {
        resolve(stream.session!);
        stream.respond({ ":status": 503 });
        stream.end();
      }),
    );
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as { port: number };
    try {
      const client = rpcClient(ContactService, `http://127.0.0.1:${port}`, 2000);
      await client.getContact({ workspaceId: "w", id: "c" }).catch(() => undefined);
      const session = await seen;
      // The client widens its session's window once connected: its WINDOW_UPDATE may follow the call.
      await vi.waitFor(() => expect(windowsOf(session)).toEqual({ stream: MiB, session: 8 * MiB }));
    } finally {
      server.close();
    }
  });
});
