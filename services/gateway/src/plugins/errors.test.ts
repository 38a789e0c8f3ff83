import { connect } from "node:net";
import { fail } from "@funil/errors";
import { Code, ConnectError } from "@funil/rpc";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientErrorHandler, errorsPlugin, frameworkError } from "./errors.js";
import { jsonBodyPlugin } from "./json-body.js";

/**
 * The error plugin in-process (docs/api/conventions.md §Errors): routes that fail in every way a route
 * can, answered through Fastify's inject, and the server's own refusals on a real socket.
 */
let app: FastifyInstance;

beforeAll(async () => {
  app = Fastify({ logger: false, bodyLimit: 1024, frameworkErrors: frameworkError, clientErrorHandler });
  await app.register(errorsPlugin);
  await app.register(jsonBodyPlugin);
  app.get("/things/:id", async (req) => {
    const { id } = req.params as { id: string };
    if (id === "missing") throw fail("not_found", "no such thing");
    if (id === "replayed")
      throw Object.assign(fail("invalid_reference", "no such contact"), { replayed: true });
    if (id === "down") throw new ConnectError("connect ECONNREFUSED 10.0.0.7:7001", Code.Unavailable);
    if (id === "bug") throw new Error('relation "secret_table" does not exist at db-7.internal');
    return { id };
  });
  app.post("/things", async (req) => ({ got: req.body ?? null }));
  await app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(async () => {
  await app?.close();
});

const get = (url: string, method: "GET" | "DELETE" | "PUT" = "GET") => app.inject({ method, url });

describe("docs/api/conventions.md §Errors: one body for every failure", () => {
  it("a domain error answers its status and stable code in {error: {code, message}}", async () => {
    const res = await get("/things/missing");
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: { code: "not_found", message: "no such thing" } });
  });

  it("a remembered failure answered again carries idempotent-replayed: true", async () => {
    const res = await get("/things/replayed");
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe("invalid_reference");
    expect(res.headers["idempotent-replayed"]).toBe("true");
  });

  it("docs/api/conventions.md §Outages and retries: a service that is away is a 503 unavailable with retry-after, never its address", async () => {
    const res = await get("/things/down");
    expect(res.statusCode).toBe(503);
    expect(res.json().error.code).toBe("unavailable");
    expect(Number(res.headers["retry-after"])).toBeGreaterThan(0);
    expect(res.body).not.toContain("10.0.0.7");
  });

  it("a bug is a 500 internal whose body never shows its cause", async () => {
    const res = await get("/things/bug");
    expect(res.statusCode).toBe(500);
    expect(res.json().error.code).toBe("internal");
    expect(res.body).not.toMatch(/secret_table|db-7|at /);
  });

  it("an unknown path is a 404 not_found; a known path with another method is a 405 with Allow", async () => {
    const unknown = await get("/nothing/here");
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe("not_found");
    const wrong = await get("/things/1", "DELETE");
    expect(wrong.statusCode).toBe(405);
    expect(wrong.json().error.code).toBe("method_not_allowed");
    expect(wrong.headers.allow).toBe("GET, HEAD");
    expect((await get("/things", "PUT")).headers.allow).toBe("POST");
  });

  it("malformed JSON is a 400 validation_failed; another content type a 415; a body over the limit a 413", async () => {
    const post = (payload: string, type = "application/json") =>
      app.inject({ method: "POST", url: "/things", payload, headers: { "content-type": type } });
    const malformed = await post("{nope");
    expect([malformed.statusCode, malformed.json().error.code]).toEqual([400, "validation_failed"]);
    const text = await post("hello", "text/plain");
    expect([text.statusCode, text.json().error.code]).toEqual([415, "unsupported_media_type"]);
    const big = await post(JSON.stringify({ s: "x".repeat(2000) }));
    expect([big.statusCode, big.json().error.code]).toEqual([413, "payload_too_large"]);
  });

  it("a path that does not decode is a 400 with the error body, from the router", async () => {
    const res = await get("/things/%C0%AF");
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe("validation_failed");
    expect(res.headers["x-request-id"]).toBeTruthy();
  });

  it("headers over the parser's limit are a 431 headers_too_large with the error body, then the socket closes", async () => {
    const { port } = app.server.address() as { port: number };
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1");
      let got = "";
      socket.on("data", (d) => {
        got += d.toString();
      });
      socket.on("close", () => resolve(got));
      socket.on("error", reject);
      socket.write(`GET /things/1 HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(20_000)}\r\n\r\n`);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(answer).toMatch(/x-request-id: \S+/);
    expect(answer).toMatch(/connection: close/);
    expect(JSON.parse(answer.split("\r\n\r\n")[1]!)).toEqual({
      error: { code: "headers_too_large", message: "request headers are too large (16 KB at most)" },
    });
  });
});
