import { connect } from "node:net";
import fc from "fast-check";
import { describe, expect, inject, it } from "vitest";
import { calendar } from "../e2e/scheduling-fixtures.js";
import { gatewayUrl, newWorkspace } from "../helpers.js";
import { loadDocument, type Operation, operations, poolOfParam, RUNS, send } from "./harness.js";
import { poolsOf, populatedWorkspace } from "./populate.js";
import { type Json, minimalValue } from "./schema-arbitrary.js";

/*
 * The edges of every operation, generated from the OpenAPI document: every list refuses a `limit`
 * outside 1..500 and takes 1 and 500 (docs/api/conventions.md §Lists and pagination), and requests malformed below the routes (what
 * HTTP's parser, the router or the body parser refuse) answer our error body and headers (docs/api/conventions.md §Errors).
 * A route that lands later is walked the same way.
 */
const doc = await loadDocument();
const ops = operations(doc);
const { ws } = await populatedWorkspace(ops);
// The lists under an id need one: a calendar for its slots, a subscription for its deliveries.
await calendar(ws);
await ws.call("POST", "/webhooks", { url: "http://127.0.0.1:9/hook", events: ["contact.created"] });
const pools = await poolsOf(ws, ops);
const operator = await newWorkspace({
  name: "Generated edge tests",
  operator: true,
  scopes: ["platform.read"],
});
const keyOf = (o: Operation) =>
  o.admin ? inject("adminToken") : o.path.startsWith("/api/v1/platform/") ? operator.key : ws.key;

/** An operation's path with real ids where the workspace has them. */
const pathOf = (o: Operation) =>
  o.path.replace(/\{([^}]+)\}/g, (_, name) => poolOfParam(o.path, name, pools)[0] ?? "x");

/** Lists are the operations whose answer is a page: `{data, nextCursor}`. */
const isList = (o: Operation) => {
  const schema = o.op.responses["200"]?.content?.["application/json"]?.schema;
  const resolved = schema?.$ref ? doc.components.schemas[schema.$ref.split("/").pop()] : schema;
  return o.method === "GET" && resolved?.properties?.nextCursor !== undefined;
};
const lists = ops.filter(isList);

describe.each(lists.map((o) => [`${o.method} ${o.path}`, o] as const))("generated limit: %s", (_, o) => {
  const required = o.parameters
    .filter((p) => p.in === "query" && p.required)
    .map((p) => [p.name, String(minimalValue(p.schema, doc, pools, p.name))] as [string, string]);
  const call = (limit: string) =>
    send({ method: "GET", path: pathOf(o), query: [...required, ["limit", limit]] }, keyOf(o));

  it("docs/api/conventions.md §Lists and pagination: every list refuses limit 0, 501, -1, 1e1 and abc with a 400 naming query.limit, and takes 1 and 500", async () => {
    for (const limit of ["0", "501", "-1", "1e1", "abc"]) {
      const res = await call(limit);
      expect(res.status, `limit=${limit}: ${res.text}`).toBe(400);
      expect(res.json?.error?.code).toBe("validation_failed");
      expect(res.json?.error?.details?.map((d: Json) => d.path)).toContain("query.limit");
    }
    for (const limit of [1, 500]) {
      const res = await call(String(limit));
      expect(res.status, `limit=${limit}: ${res.text}`).toBe(200);
      expect(res.json.data.length).toBeLessThanOrEqual(limit);
    }
  });
});

it("docs/api/conventions.md §Lists and pagination: the generator found the lists, short ones included", () => {
  const names = lists.map((o) => o.path);
  for (const path of [
    "/api/v1/contacts",
    "/api/v1/custom-fields",
    "/api/v1/pipelines",
    "/api/v1/members",
    "/api/v1/calendars",
    "/api/v1/webhooks",
    "/api/v1/webhooks/{id}/deliveries",
    "/api/v1/calendars/{id}/slots",
  ])
    expect(names).toContain(path);
});

/** One raw exchange: the request's text as written, the answer once the server closed the connection. */
function exchange(text: string): Promise<{ status: number; headers: Map<string, string>; body: string }> {
  const { hostname, port } = new URL(gatewayUrl());
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(text));
    let answer = "";
    socket.setTimeout(10_000, () =>
      socket.destroy(new Error(`no answer to ${JSON.stringify(text.slice(0, 200))}`)),
    );
    socket.on("data", (d) => {
      answer += d.toString("latin1");
    });
    socket.on("close", () => {
      const [head = "", ...rest] = answer.split("\r\n\r\n");
      const [statusLine = "", ...lines] = head.split("\r\n");
      const headers = new Map(
        lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
      );
      resolve({ status: Number(statusLine.split(" ")[1]), headers, body: rest.join("\r\n\r\n") });
    });
    socket.on("error", reject);
  });
}

interface Raw {
  requestLine: string;
  headers: string[];
  body: string;
}

/** Control bytes a header value may not hold (tab is allowed). */
const control = fc.constantFrom(0x01, 0x07, 0x0b, 0x0c, 0x1b, 0x7f).map((c) => String.fromCharCode(c));

/** One thing wrong below the routes, applied to a well-formed request. */
const malformations: Array<fc.Arbitrary<(r: Raw, o: Operation) => Raw>> = [
  fc.constant((r) => ({ ...r, headers: [...r.headers, "x-folded: a", " b"] })),
  control.map((c) => (r) => ({ ...r, headers: [...r.headers, `x-control: a${c}b`] })),
  fc.constantFrom("%C0%AF", "%ZZ", "%ED%A0%80", "%FF").map((bad) => (r) => ({
    ...r,
    requestLine: r.requestLine.replace(/ (\S+) HTTP/, (_, path) => ` ${path}/${bad} HTTP`),
  })),
  fc.constantFrom("abc", "-1", "1, 2").map((length) => (r) => ({
    ...r,
    headers: [...r.headers, `content-length: ${length}`],
  })),
  fc.constant((r) => ({
    ...r,
    headers: [...r.headers, "transfer-encoding: chunked"],
    body: "zz\r\n{}\r\n0\r\n\r\n",
  })),
  fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/).map((expectation) => (r) => ({
    ...r,
    headers: [...r.headers, `expect: ${expectation}`],
  })),
  fc.constant((r) => ({ ...r, headers: r.headers.filter((h) => !h.startsWith("host:")) })),
  fc.constant((r) => ({ ...r, headers: [...r.headers, `x-big: ${"a".repeat(17_000)}`] })),
  fc.constant((r) => ({ ...r, headers: [...r.headers, "bad header: x"] })),
  fc.constant((r) => ({ ...r, requestLine: r.requestLine.replace(" HTTP/1.1", "/a b HTTP/1.1") })),
];

/** A body that is not JSON, for the operations that take one (a GET's body is not read). */
const notJson = fc
  .constantFrom("text/plain", "application/x-www-form-urlencoded", "text/html; charset=utf-8")
  .map((type) => (r: Raw) => ({
    ...r,
    headers: [...r.headers, `content-type: ${type}`, "content-length: 2"],
    body: "{}",
  }));
const withBody = ops.flatMap((o, i) => (o.method === "GET" ? [] : [i]));

/** An operation (by its index: a counterexample then stays short) and what is wrong with its request. */
const cases = fc.oneof(
  fc.tuple(fc.nat({ max: ops.length - 1 }), fc.oneof(...malformations)),
  fc.tuple(fc.constantFrom(...withBody), notJson),
);

const isError = (v: Json) =>
  v?.error &&
  typeof v.error.code === "string" &&
  typeof v.error.message === "string" &&
  Object.keys(v.error).every((k) => ["code", "message", "details"].includes(k)) &&
  Object.keys(v).length === 1;

it("docs/api/conventions.md §Errors: requests malformed below the routes answer a documented 4xx with our error body, an x-request-id, and x-ratelimit-* only where documented", async () => {
  await fc.assert(
    fc.asyncProperty(cases, async ([index, malform]) => {
      const o = ops[index]!;
      const request = malform(
        {
          requestLine: `${o.method} ${pathOf(o)} HTTP/1.1`,
          headers: ["host: x", "connection: close", `authorization: Bearer ${keyOf(o)}`],
          body: "",
        },
        o,
      );
      const text = `${request.requestLine}\r\n${request.headers.join("\r\n")}\r\n\r\n${request.body}`;
      const answer = await exchange(text);
      const what = `${JSON.stringify(text.slice(0, 300))} → ${answer.status} ${answer.body.slice(0, 300)}`;
      expect(answer.status >= 400 && answer.status < 500, what).toBe(true);
      expect(answer.headers.get("content-type"), what).toMatch(/^application\/json/);
      let body: Json;
      try {
        body = JSON.parse(answer.body);
      } catch {}
      expect(isError(body), what).toBe(true);
      expect(answer.headers.get("x-request-id"), what).toBeTruthy();
      const documented = o.op.responses[String(answer.status)];
      if (answer.status !== 404 && answer.status !== 405) expect(documented, what).toBeDefined();
      if (documented && !documented.headers?.["x-ratelimit-limit"])
        expect(answer.headers.has("x-ratelimit-limit"), what).toBe(false);
    }),
    { numRuns: Math.max(RUNS * 10, 60) },
  );
});
