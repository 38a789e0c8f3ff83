import { connect } from "node:net";
import { loadConfig } from "@funil/config";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { gatewayConfig } from "../../services/gateway/src/config.js";
import { deepArray, deepObject, type Json } from "../generated/schema-arbitrary.js";
import {
  type GatewayCopy,
  gatewayCopy,
  gatewayUrl,
  keyFor,
  newWorkspace,
  request,
  type Workspace,
} from "../helpers.js";
import { contact, deal, member, pipeline } from "./crm-fixtures.js";

const copy = gatewayCopy;

/**
 * One raw HTTP/1.1 exchange, for what fetch refuses to send: the answer is what arrived when the server
 * closed the connection, so the request must ask for that (`connection: close`) unless it is malformed.
 */
function raw(text: string): Promise<string> {
  const { hostname, port } = new URL(gatewayUrl());
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(text));
    let answer = "";
    socket.on("data", (d) => {
      answer += d.toString("latin1");
    });
    socket.on("close", () => resolve(answer));
    socket.on("error", reject);
  });
}

/** A raw answer taken apart: status, lower-cased headers, the body parsed when it is JSON. */
function parsed(answer: string) {
  const [head = "", ...rest] = answer.split("\r\n\r\n");
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headers = new Map(
    lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
  );
  let body: Json;
  try {
    body = JSON.parse(rest.join("\r\n\r\n"));
  } catch {}
  return { status: Number(statusLine.split(" ")[1]), headers, body };
}

/** One raw request to the gateway, its lines joined with CRLF, the connection closed after it. */
const rawRequest = (...lines: string[]) => raw(`${lines.join("\r\n")}\r\n\r\n`).then(parsed);

let ws: Workspace;
beforeAll(async () => {
  ws = await newWorkspace();
});

describe("docs/api/conventions.md §Errors: odd bodies are a 4xx, never a 500", () => {
  it("docs/api/conventions.md §Errors: a body nested thousands of levels deep is a 400 validation_failed on every write route", async () => {
    for (const body of [deepArray(4000), deepObject(10_000), `{"name":"a","tags":${deepArray(40)}}`]) {
      for (const [method, path] of [
        ["POST", "/contacts"],
        ["POST", "/opportunities"],
        ["POST", "/tasks"],
        ["PATCH", "/tasks/tk_1"],
      ] as const) {
        const res = await ws.call(method, path, body);
        expect(res.status, `${method} ${path}`).toBe(400);
        expect(res.body.error.code).toBe("validation_failed");
        expect(res.body.error.message).toMatch(/nest/);
      }
    }
  });

  it("docs/api/conventions.md §Errors: customFields holding a list 50 levels deep is a 400, on contacts and deals alike", async () => {
    const p = await pipeline(ws);
    const c = await contact(ws);
    const deep = JSON.parse(deepArray(50));
    const upsert = await ws.call("POST", "/contacts", {
      name: "a",
      phone: "11999990000",
      customFields: { plan: deep },
    });
    expect(upsert.status).toBe(400);
    const created = await ws.call("POST", "/opportunities", {
      contactId: c.id,
      pipelineId: p.id,
      title: "x",
      customFields: { plan: deep },
    });
    expect(created.status).toBe(400);
    const patched = await ws.call("PATCH", `/contacts/${c.id}`, { customFields: { plan: deep } });
    expect(patched.status).toBe(400);
  });

  it("docs/api/conventions.md §Lists and pagination: a cursor the list issued, with a NUL put inside, is a 400 invalid_cursor", async () => {
    const p = await pipeline(ws);
    const c1 = await contact(ws);
    const c2 = await contact(ws);
    await deal(ws, { contactId: c1.id, pipelineId: p.id });
    await deal(ws, { contactId: c2.id, pipelineId: p.id });
    await ws.call("POST", "/tasks", { title: "a", contactId: c1.id });
    await ws.call("POST", "/tasks", { title: "b", contactId: c2.id });
    for (const list of ["/contacts", "/opportunities", "/tasks"]) {
      const page = await ws.call("GET", `${list}?limit=1`);
      expect(page.body.nextCursor, list).toEqual(expect.any(String));
      const [payload, tag] = (page.body.nextCursor as string).split(".");
      const decoded = JSON.parse(Buffer.from(payload!, "base64url").toString());
      decoded.p[1] = `${decoded.p[1]}\u0000`;
      const forged = `${Buffer.from(JSON.stringify(decoded)).toString("base64url")}.${tag}`;
      const res = await ws.call("GET", `${list}?limit=1&cursor=${forged}`);
      expect(res.status, list).toBe(400);
      expect(res.body.error.code).toBe("invalid_cursor");
    }
  });

  it("docs/api/conventions.md §Lists and pagination: limit is plain decimal digits: 1e1, ' 10' and 0x10 are a 400", async () => {
    for (const limit of ["1e1", "%2010", "0x10", "10.0", ""]) {
      const res = await ws.call("GET", `/contacts?limit=${limit}`);
      expect(res.status, limit).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
    }
    expect((await ws.call("GET", "/contacts?limit=10")).status).toBe(200);
  });

  it("docs/api/conventions.md §Format: an empty body with content-type application/json is no body on routes that take none", async () => {
    const c = await contact(ws);
    const res = await ws.call("POST", `/contacts/${c.id}/archive`, "", {
      "content-type": "application/json",
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("archived");
    const needsOne = await ws.call("POST", "/contacts", "", { "content-type": "application/json" });
    expect(needsOne.status).toBe(400);
    expect(needsOne.body.error.code).toBe("validation_failed");
  });
});

describe("docs/api/conventions.md §Errors: answers below the routes keep the contract", () => {
  it("docs/api/conventions.md §Errors: headers over 16 KB are a 431 with the error body and an x-request-id", async () => {
    const answer = await raw(
      `GET /api/v1/contacts HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(20_000)}\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(answer).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/);
    expect(JSON.parse(answer.split("\r\n\r\n")[1]!)).toEqual({
      error: { code: "headers_too_large", message: expect.any(String) },
    });
  });

  it("docs/api/conventions.md §Errors: a malformed Content-Length is a 400 with the error body and an x-request-id", async () => {
    const answer = await raw("POST /api/v1/contacts HTTP/1.1\r\nhost: x\r\ncontent-length: abc\r\n\r\n{}");
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/\r\nx-request-id: /);
    expect(JSON.parse(answer.split("\r\n\r\n")[1]!).error.code).toBe("validation_failed");
  });

  it("docs/api/conventions.md §Errors: a chunked body malformed after its route already answered gets that one answer, never a second", async () => {
    // The headers go first and the route answers them (415: no content-type); only then does the body's
    // bad chunk size reach the parser, whose refusal must not write a second answer on the same stream.
    const { hostname, port } = new URL(gatewayUrl());
    const answer = await new Promise<string>((resolve, reject) => {
      let got = "";
      const socket = connect(Number(port), hostname, () =>
        socket.write(
          `POST /api/v1/appointments HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${ws.key}\r\n` +
            "transfer-encoding: chunked\r\n\r\n",
        ),
      );
      socket.on("data", (d) => {
        const first = got === "";
        got += d.toString("latin1");
        if (first) socket.write("zz\r\n{}\r\n0\r\n\r\n");
      });
      // The server closes the connection after the parser's refusal; a second answer would come before.
      const giveUp = setTimeout(() => socket.destroy(), 3_000);
      socket.on("close", () => {
        clearTimeout(giveUp);
        resolve(got);
      });
      socket.on("error", reject);
    });
    expect(answer.match(/HTTP\/1\.1 /g), answer).toHaveLength(1);
    const { status, headers, body } = parsed(answer);
    expect(status, answer).toBe(415);
    expect(headers.get("x-request-id")).toBeTruthy();
    expect(body?.error?.code, answer).toBe("unsupported_media_type");
  });

  it("docs/api/conventions.md §Errors: a malformed percent-encoding in the path answers with an x-request-id", async () => {
    const res = await ws.call("GET", "/contacts/%ZZ");
    expect(res.status).toBe(400);
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expect(res.body.error.code).toBe("validation_failed");
  });

  it("docs/api/conventions.md §Errors: a known path with another method is a 405 with Allow; an unknown path stays a 404", async () => {
    const res = await ws.call("DELETE", "/contacts");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD, POST");
    expect(res.body.error.code).toBe("method_not_allowed");
    const one = await ws.call("PUT", "/contacts/ct_1");
    expect(one.status).toBe(405);
    expect(one.headers.get("allow")).toBe("GET, HEAD, PATCH");
    expect((await ws.call("GET", "/nothing-here")).status).toBe(404);
  });

  it("docs/api/conventions.md §Format: answers over 1 KB are compressed when the client asks, and only then", async () => {
    const url = `${gatewayUrl()}/api/v1/openapi.json`;
    // fetch decompresses what it asked to be compressed, and keeps the header that says so.
    const zipped = await request("GET", url, undefined, { "accept-encoding": "gzip" });
    expect(zipped.headers.get("content-encoding")).toBe("gzip");
    expect(zipped.body.openapi).toBe("3.1.0");
    const plain = await request("GET", url, undefined, { "accept-encoding": "identity" });
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(plain.body.openapi).toBe("3.1.0");
    const small = await request("GET", `${gatewayUrl()}/healthz`, undefined, { "accept-encoding": "gzip" });
    expect(small.headers.get("content-encoding")).toBeNull();
  });
});

describe("docs/api/conventions.md §Rate limits, §Format (CORS)", () => {
  let limited: GatewayCopy;
  let open: GatewayCopy;
  beforeAll(async () => {
    [limited, open] = await Promise.all([
      copy({ RATE_LIMIT_MAX: "3", RATE_LIMIT_WINDOW_MS: "60000" }),
      copy({ CORS_ORIGINS: "https://app.example.com, http://localhost:5173" }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([limited?.stop(), open?.stop()]);
  });

  it("docs/api/conventions.md §Rate limits: requests refused by validation or scope count, and carry x-ratelimit-* headers", async () => {
    const reader = await keyFor(ws, ["contacts.read"]);
    const call = (path: string, method = "GET", body?: unknown) =>
      request(method, `${limited.url}/api/v1${path}`, body, { authorization: `Bearer ${reader.key}` });
    const refused = [await call("/contacts?limit=0"), await call("/contacts", "POST", { name: "x" })];
    expect(refused.map((r) => r.status)).toEqual([400, 403]);
    for (const r of refused) expect(r.headers.get("x-ratelimit-limit")).toBe("3");
    expect(refused[1]!.headers.get("x-ratelimit-remaining")).toBe("1");
    expect((await call("/contacts")).status).toBe(200);
    const over = await call("/contacts");
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe("rate_limited");
  });

  it("docs/operations.md §Gateway: CORS is off by default: no access-control header, whatever the origin", async () => {
    const res = await ws.call("GET", "/contacts", undefined, { origin: "https://app.example.com" });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("docs/operations.md §Gateway: with CORS_ORIGINS, listed origins get CORS answers and preflights, others none", async () => {
    const preflight = await request("OPTIONS", `${open.url}/api/v1/contacts`, undefined, {
      origin: "https://app.example.com",
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type",
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(preflight.headers.get("access-control-allow-headers")).toMatch(/authorization/);
    const res = await request("GET", `${open.url}/api/v1/contacts`, undefined, {
      origin: "http://localhost:5173",
      authorization: `Bearer ${ws.key}`,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
    expect(res.headers.get("access-control-expose-headers")).toMatch(/x-request-id/);
    const other = await request("GET", `${open.url}/api/v1/contacts`, undefined, {
      origin: "https://evil.example.com",
      authorization: `Bearer ${ws.key}`,
    });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("docs/operations.md §Gateway: a malformed CORS_ORIGINS stops the gateway with a message naming it", () => {
    expect(() => loadConfig(gatewayConfig, { CORS_ORIGINS: "app.example.com" })).toThrow(/CORS_ORIGINS/);
  });
});

describe("docs/api/conventions.md §Base URL and versioning: the OpenAPI document lists every answer the server gives", () => {
  let doc: Json;
  beforeAll(async () => {
    doc = (await request("GET", `${gatewayUrl()}/api/v1/openapi.json`)).body;
  });
  const operations = (): Array<[string, string, Json]> =>
    Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item as Record<string, Json>).map(
        ([method, op]) => [method, path, op] as [string, string, Json],
      ),
    );

  it("docs/api/conventions.md §Base URL and versioning: every operation has a unique operationId, a summary, and documents 400, 401, 431, 500 and 503", () => {
    const ids = operations().map(([, , op]) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const [method, path, op] of operations()) {
      expect(op.summary, `${method} ${path}`).toBeTruthy();
      for (const status of ["400", "401", "431", "500", "503"])
        expect(op.responses[status], `${method} ${path} ${status}`).toBeDefined();
      if (["post", "patch", "delete"].includes(method))
        for (const status of ["413", "415"])
          expect(op.responses[status], `${method} ${path} ${status}`).toBeDefined();
      if (path.startsWith("/api/v1")) expect(op.responses["429"].headers["retry-after"]).toBeDefined();
      for (const response of Object.values(op.responses))
        expect((response as Json).headers["x-request-id"]).toBeDefined();
    }
    expect(doc.paths["/api/v1/contacts"].get.responses["200"].headers["x-ratelimit-remaining"]).toBeDefined();
  });

  it("docs/api/conventions.md §Base URL and versioning: a public operationId is a verb then its resource, list… for a list, get… for one", () => {
    for (const [method, path, op] of operations()) {
      if (!path.startsWith("/api/v1/")) continue;
      const id: string = op.operationId;
      expect(id, `${method} ${path}`).toMatch(/^[a-z]+[A-Z][A-Za-z]*$/);
      expect(id, `${method} ${path}`).not.toMatch(/By[A-Z]/);
      const paged = op.responses["200"]?.content?.["application/json"]?.schema?.properties?.nextCursor;
      if (method === "get") expect(id, `${method} ${path}`).toMatch(paged ? /^list[A-Z]/ : /^get[A-Z]/);
      if (method === "patch") expect(id, `${method} ${path}`).toMatch(/^update[A-Z]/);
      if (method === "delete") expect(id, `${method} ${path}`).toMatch(/^delete[A-Z]/);
    }
    expect(doc.paths["/api/v1/contacts/{id}/archive"].post.operationId).toBe("archiveContact");
  });

  it("docs/api/admin.md §Routes: DELETE /admin/v1/keys/{id} documents its 204; single-page lists type nextCursor as string or null", () => {
    const revoke = doc.paths["/admin/v1/keys/{id}"].delete.responses;
    expect(revoke["204"]).toBeDefined();
    expect(revoke["200"]).toBeUndefined();
    for (const path of [
      "/api/v1/members",
      "/api/v1/custom-fields",
      "/api/v1/pipelines",
      "/admin/v1/workspaces",
    ]) {
      const schema = doc.paths[path].get.responses["200"].content["application/json"].schema;
      const cursor = JSON.stringify(schema.properties?.nextCursor ?? schema);
      expect(cursor, path).toMatch(/"string"/);
    }
  });

  it("docs/api/deals.md §Task: a task's title and a note's body document their minLength", () => {
    const s = doc.components.schemas;
    expect(s.TaskCreateInput.properties.title.minLength).toBe(1);
    expect(s.NoteCreateInput.properties.body.minLength).toBe(1);
  });
});

describe("docs/api/conventions.md §Authentication and API keys: ambiguous credentials are refused, never chosen between", () => {
  it("two Authorization headers are a 401 unauthorized, whichever key comes first", async () => {
    const other = await newWorkspace();
    for (const [first, second] of [
      [`Bearer ${ws.key}`, "Bearer garbage"],
      [`Bearer ${other.key}`, `Bearer ${ws.key}`],
      [`Bearer ${ws.key}`, `Bearer ${ws.key}`],
    ]) {
      const res = await rawRequest(
        "GET /api/v1/contacts HTTP/1.1",
        "host: x",
        "connection: close",
        `authorization: ${first}`,
        `Authorization: ${second}`,
      );
      expect(res.status, `${first} then ${second}`).toBe(401);
      expect(res.body).toEqual({ error: { code: "unauthorized", message: expect.stringMatching(/one/) } });
      expect(res.headers.get("x-request-id")).toBeTruthy();
    }
    const one = await rawRequest(
      "GET /api/v1/contacts HTTP/1.1",
      "host: x",
      "connection: close",
      `authorization: Bearer ${ws.key}`,
    );
    expect(one.status).toBe(200);
  });

  it("the admin token sent twice is a 401 too", async () => {
    const token = `authorization: Bearer ${inject("adminToken")}`;
    const res = await rawRequest(
      "GET /admin/v1/workspaces HTTP/1.1",
      "host: x",
      "connection: close",
      token,
      token,
    );
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe("unauthorized");
  });
});

describe("docs/api/conventions.md §Lists and pagination: cursors are tamper-evident", () => {
  it("a cursor re-encoded with a changed position is a 400 invalid_cursor; the one issued reads on", async () => {
    const mine = await newWorkspace();
    const made = [await contact(mine), await contact(mine), await contact(mine)];
    const first = await mine.call("GET", "/contacts?limit=1");
    const cursor: string = first.body.nextCursor;
    expect(cursor).toEqual(expect.any(String));
    const [payload, tag] = cursor.split(".");
    const decoded = JSON.parse(Buffer.from(payload!, "base64url").toString());
    // The position of the last contact: a client skipping ahead to it, or back to the start.
    for (const p of [
      [decoded.p[0], made[2]!.id],
      ["2000-01-01T00:00:00.000Z", decoded.p[1]],
    ]) {
      const forged = `${Buffer.from(JSON.stringify({ ...decoded, p })).toString("base64url")}.${tag}`;
      const res = await mine.call("GET", `/contacts?limit=1&cursor=${forged}`);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("invalid_cursor");
    }
    const next = await mine.call("GET", `/contacts?limit=1&cursor=${cursor}`);
    expect(next.status).toBe(200);
    expect(next.body.data[0].id).toBe(made[1]!.id);
  });

  it("the short lists' cursors are signed too", async () => {
    const mine = await newWorkspace();
    await member(mine);
    await member(mine);
    const first = await mine.call("GET", "/members?limit=1");
    const [payload, tag] = (first.body.nextCursor as string).split(".");
    const decoded = JSON.parse(Buffer.from(payload!, "base64url").toString());
    const forged = `${Buffer.from(JSON.stringify({ ...decoded, p: [-1, "x"] })).toString("base64url")}.${tag}`;
    const res = await mine.call("GET", `/members?limit=1&cursor=${forged}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("invalid_cursor");
  });
});

describe("docs/api/conventions.md §Lists and pagination: every list takes limit 1..500", () => {
  const SHORT = ["/custom-fields", "/pipelines", "/members", "/calendars", "/webhooks"];

  it("the short lists refuse limit 0, 501, -1, 1e1 and abc with a 400 naming query.limit", async () => {
    for (const path of SHORT)
      for (const limit of ["0", "501", "-1", "1e1", "abc"]) {
        const res = await ws.call("GET", `${path}?limit=${limit}`);
        expect(res.status, `${path}?limit=${limit}`).toBe(400);
        expect(res.body.error.code).toBe("validation_failed");
        expect(res.body.error.details.map((d: Json) => d.path)).toContain("query.limit");
      }
  });

  it("a short list pages by limit and cursor, and is one page (nextCursor null) by default", async () => {
    const mine = await newWorkspace();
    const members = [await member(mine), await member(mine), await member(mine)];
    const whole = await mine.call("GET", "/members");
    expect(whole.body.data.map((m: Json) => m.id)).toEqual(members.map((m) => m.id));
    expect(whole.body.nextCursor).toBeNull();
    expect((await mine.call("GET", "/custom-fields?limit=500")).status).toBe(200);
    const seen: string[] = [];
    let cursor: string | null = "";
    while (cursor !== null) {
      const page: Json = await mine.call("GET", `/members?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.data.map((m: Json) => m.id));
      cursor = page.body.nextCursor;
    }
    expect(seen).toEqual(members.map((m) => m.id));
  });

  it("a subscription's deliveries take limit 1..500 (at most 50 come back) and no cursor", async () => {
    const sub = await ws.call("POST", "/webhooks", {
      url: "http://127.0.0.1:9/hook",
      events: ["contact.created"],
    });
    expect(sub.status).toBe(201);
    const id = sub.body.subscription.id;
    for (const limit of ["0", "501", "abc"])
      expect((await ws.call("GET", `/webhooks/${id}/deliveries?limit=${limit}`)).status).toBe(400);
    const page = await ws.call("GET", `/webhooks/${id}/deliveries?limit=500`);
    expect(page.status).toBe(200);
    expect(page.body.nextCursor).toBeNull();
    expect((await ws.call("GET", `/webhooks/${id}/deliveries?cursor=abc`)).status).toBe(400);
  });
});

describe("docs/api/conventions.md §Errors: answers below the routes carry our error body and headers", () => {
  const authorized = () => `authorization: Bearer ${ws.key}`;

  it("an Expect other than 100-continue is a 417 expectation_failed with our body and headers", async () => {
    for (const [method, path] of [
      ["GET", "/api/v1/contacts"],
      ["POST", "/api/v1/contacts"],
      ["GET", "/healthz"],
    ] as const) {
      const head = [
        `${method} ${path} HTTP/1.1`,
        "host: x",
        "connection: close",
        "expect: something-else",
        authorized(),
        "content-type: application/json",
        "content-length: 2",
      ];
      const res = parsed(await raw(`${head.join("\r\n")}\r\n\r\n{}`));
      expect(res.status, `${method} ${path}`).toBe(417);
      expect(res.body).toEqual({ error: { code: "expectation_failed", message: expect.any(String) } });
      expect(res.headers.get("x-request-id")).toBeTruthy();
      if (path.startsWith("/api/v1")) expect(res.headers.get("x-ratelimit-limit")).toBeTruthy();
    }
  });

  it("an HTTP/1.1 request without Host is a 400 with our body and headers; HTTP/1.0 needs none", async () => {
    const res = await rawRequest("GET /api/v1/contacts HTTP/1.1", "connection: close", authorized());
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { code: "validation_failed", message: expect.stringMatching(/Host/) },
    });
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expect(res.headers.get("x-ratelimit-limit")).toBeTruthy();
    const old = await rawRequest("GET /api/v1/contacts HTTP/1.0", authorized());
    expect(old.status).toBe(200);
  });

  it("obs-fold, control bytes in a header value and %C0%AF in a path are a 400 with our body and an x-request-id", async () => {
    for (const lines of [
      ["GET /api/v1/contacts HTTP/1.1", "host: x", authorized(), "x-folded: a", " b"],
      ["GET /api/v1/contacts HTTP/1.1", "host: x", authorized(), "x-control: a\u0001b"],
      ["GET /api/v1/contacts/%C0%AF HTTP/1.1", "host: x", "connection: close", authorized()],
    ]) {
      const res = await rawRequest(...lines);
      expect(res.status, lines.join(" | ")).toBe(400);
      expect(res.body).toEqual({ error: { code: "validation_failed", message: expect.any(String) } });
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(res.headers.get("x-request-id")).toBeTruthy();
      // Refused before the key was read: no rate limit was taken, none is shown (as documented).
      expect(res.headers.get("x-ratelimit-limit")).toBeUndefined();
    }
  });

  it("a POST body with content-type text/plain is a 415 unsupported_media_type", async () => {
    for (const type of ["text/plain", "text/plain; charset=utf-8"]) {
      const res = await ws.call("POST", "/contacts", JSON.stringify({ name: "a", phone: "11999990001" }), {
        "content-type": type,
      });
      expect(res.status, type).toBe(415);
      expect(res.body.error.code).toBe("unsupported_media_type");
      expect(res.headers.get("x-ratelimit-limit")).toBeTruthy();
    }
  });

  it("the OpenAPI document says 401 and 431 carry no x-ratelimit-*, and lists 417 everywhere", async () => {
    const doc = (await request("GET", `${gatewayUrl()}/api/v1/openapi.json`)).body;
    const op = doc.paths["/api/v1/contacts"].get.responses;
    expect(op["417"]).toBeDefined();
    expect(op["431"].headers["x-ratelimit-limit"]).toBeUndefined();
    expect(op["401"].headers["x-ratelimit-limit"]).toBeUndefined();
    expect(op["400"].headers["x-ratelimit-limit"]).toBeDefined();
  });
});
