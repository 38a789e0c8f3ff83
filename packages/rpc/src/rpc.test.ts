import { Code, ConnectError } from "@connectrpc/connect";
import { ContactService } from "@funil/contracts";
import { fail } from "@funil/errors";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpcClient } from "./client.js";
import { describeError } from "./errors.js";
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

describe("service client (issue 2: deadline, retries on unavailable)", () => {
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
