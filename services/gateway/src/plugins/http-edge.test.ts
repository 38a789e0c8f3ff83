import { connect } from "node:net";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorsPlugin } from "./errors.js";
import { httpEdgePlugin } from "./http-edge.js";

/**
 * What Node's HTTP server would answer itself, with an empty body (docs/api/conventions.md §Errors):
 * an `Expect` it cannot meet and an HTTP/1.1 request without `Host`, answered here with the error body.
 */
let app: FastifyInstance;

beforeAll(async () => {
  app = Fastify({ logger: false, http: { requireHostHeader: false } });
  await app.register(errorsPlugin);
  await app.register(httpEdgePlugin);
  app.get("/ping", async () => ({ ok: true }));
  await app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(async () => {
  await app?.close();
});

/** One raw HTTP exchange on a fresh socket: what the server wrote before it closed or went quiet. */
function raw(request: string): Promise<string> {
  const { port } = app.server.address() as { port: number };
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let got = "";
    const done = () => {
      socket.destroy();
      resolve(got);
    };
    socket.on("data", (d) => {
      got += d.toString();
      if (/\r\n\r\n[\s\S]*\}$/.test(got)) done();
    });
    socket.on("close", done);
    socket.on("error", reject);
    socket.write(request);
  });
}
const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));

describe("docs/api/conventions.md §Errors: answers HTTP's parser would give, with the error body", () => {
  it("an Expect other than 100-continue is a 417 expectation_failed, over inject and over a real socket", async () => {
    const res = await app.inject({ method: "GET", url: "/ping", headers: { expect: "teapot" } });
    expect(res.statusCode).toBe(417);
    expect(res.json().error.code).toBe("expectation_failed");
    const answer = await raw("GET /ping HTTP/1.1\r\nhost: x\r\nexpect: teapot\r\n\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 417 /);
    expect(bodyOf(answer).error.code).toBe("expectation_failed");
  });

  it("100-continue is met: the request is served", async () => {
    const res = await app.inject({ method: "GET", url: "/ping", headers: { expect: "100-continue" } });
    expect(res.statusCode).toBe(200);
  });

  it("an HTTP/1.1 request without Host is a 400 validation_failed; HTTP/1.0 needs none", async () => {
    const answer = await raw("GET /ping HTTP/1.1\r\n\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(bodyOf(answer).error).toMatchObject({
      code: "validation_failed",
      message: expect.stringContaining("Host"),
    });
    expect(await raw("GET /ping HTTP/1.0\r\n\r\n")).toMatch(/^HTTP\/1\.1 200 /);
  });
});
