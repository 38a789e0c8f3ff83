import { connect } from "node:net";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminTokenHook } from "./token.js";

/** The admin API's token check in-process (docs/api/admin.md: ADMIN_TOKEN, at least 16 characters). */
const TOKEN = "an-admin-token-of-enough-length";
const apps: FastifyInstance[] = [];

async function adminApp(token: string | undefined) {
  const app = Fastify({ logger: false });
  app.addHook("onRequest", adminTokenHook(token));
  app.get("/workspaces", async () => ({ data: [] }));
  await app.listen({ port: 0, host: "127.0.0.1" });
  apps.push(app);
  return app;
}
afterAll(async () => {
  for (const app of apps) await app.close();
});

describe("docs/api/admin.md: Authorization: Bearer <ADMIN_TOKEN>", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await adminApp(TOKEN);
  });
  const call = (authorization?: string) =>
    app.inject({ method: "GET", url: "/workspaces", headers: authorization ? { authorization } : {} });

  it("the token lets the operator in", async () => {
    expect((await call(`Bearer ${TOKEN}`)).statusCode).toBe(200);
  });

  it.each([
    ["no header", undefined],
    ["another token", "Bearer another-admin-token-entirely"],
    ["the token with a character more", `Bearer ${TOKEN}x`],
    ["another scheme", `Basic ${TOKEN}`],
  ])("%s is a 401 unauthorized with the error body", async (_name, authorization) => {
    const res = await call(authorization);
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe("unauthorized");
  });

  it("the token sent twice is a 401: credentials are never chosen between", async () => {
    const { port } = app.server.address() as { port: number };
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1");
      let got = "";
      socket.on("data", (d) => {
        got += d.toString();
      });
      socket.on("close", () => resolve(got));
      socket.on("error", reject);
      socket.write(
        `GET /workspaces HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${TOKEN}\r\nauthorization: Bearer ${TOKEN}\r\nconnection: close\r\n\r\n`,
      );
    });
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
  });

  it("without ADMIN_TOKEN the admin API is off: every request is a 401, whatever it sends", async () => {
    const off = await adminApp(undefined);
    for (const authorization of [undefined, "Bearer ", "Bearer undefined", `Bearer ${TOKEN}`]) {
      const res = await off.inject({
        method: "GET",
        url: "/workspaces",
        headers: authorization ? { authorization } : {},
      });
      expect(res.statusCode).toBe(401);
    }
  });
});
