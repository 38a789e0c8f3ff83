import { isUtf8 } from "node:buffer";
import fc from "fast-check";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorsPlugin } from "./errors.js";
import { firstInvalidUtf8, jsonBodyPlugin, MAX_JSON_DEPTH } from "./json-body.js";

describe("firstInvalidUtf8 (docs/api/conventions.md §Text is kept as sent: invalid UTF-8 is refused, not replaced)", () => {
  it("finds nothing in well-formed UTF-8, whatever the characters", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (s) => {
        expect(firstInvalidUtf8(Buffer.from(s, "utf8"))).toBe(-1);
      }),
    );
  });

  it("agrees with Node's validator on any bytes, and the bytes before the one it finds are valid", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        const at = firstInvalidUtf8(bytes);
        expect(at === -1).toBe(isUtf8(bytes));
        if (at >= 0) expect(isUtf8(bytes.subarray(0, at))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("names the lead byte of each kind of broken sequence", () => {
    const cases: Array<[number[], number]> = [
      [[0x61, 0x80], 1], // a lone continuation byte
      [[0x61, 0xc3], 1], // a sequence cut short
      [[0xc0, 0xaf], 0], // an overlong form
      [[0xed, 0xa0, 0x80], 0], // a surrogate written as UTF-8 (CESU-8)
      [[0xf4, 0x90, 0x80, 0x80], 0], // past U+10FFFF
      [[0x61, 0xe2, 0x82, 0x41], 1], // a third byte that is no continuation
      [[0xff], 0],
    ];
    for (const [bytes, at] of cases) expect(firstInvalidUtf8(Uint8Array.from(bytes)), String(bytes)).toBe(at);
  });
});

describe("JSON bodies through the plugin (docs/api/conventions.md §Format, §Text is kept as sent)", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = Fastify({ logger: false });
    await app.register(errorsPlugin);
    await app.register(jsonBodyPlugin);
    app.post("/echo", async (req) => ({ body: req.body ?? "none" }));
  });
  afterAll(async () => {
    await app?.close();
  });
  const post = (payload: string | Buffer, type = "application/json") =>
    app.inject({ method: "POST", url: "/echo", payload, headers: { "content-type": type } });

  it("a JSON body reaches the route as sent, Unicode included", async () => {
    const body = { name: "Zoë 𝄞 עברית", nested: { list: [1, "two"] } };
    const res = await post(JSON.stringify(body));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ body });
  });

  it("an empty body with content-type application/json is no body", async () => {
    expect((await post("")).json()).toEqual({ body: "none" });
    expect((await post("  \n")).json()).toEqual({ body: "none" });
  });

  it(`nesting deeper than ${MAX_JSON_DEPTH} levels is a 400 validation_failed; ${MAX_JSON_DEPTH} levels pass`, async () => {
    const nest = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
    expect((await post(nest(MAX_JSON_DEPTH))).statusCode).toBe(200);
    const deep = await post(nest(MAX_JSON_DEPTH + 1));
    expect([deep.statusCode, deep.json().error.code]).toEqual([400, "validation_failed"]);
    const huge = await post(nest(100_000));
    expect(huge.statusCode).toBe(400);
  });

  it("invalid UTF-8 is a 400 naming the field whose string held it, or the body", async () => {
    const inField = Buffer.concat([
      Buffer.from('{"ok":"fine","company":"Ac'),
      Buffer.from([0xff]),
      Buffer.from('me"}'),
    ]);
    const res = await post(inField);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({
      code: "validation_failed",
      details: [{ path: "body.company" }],
    });
    const outside = await post(Buffer.concat([Buffer.from('{"a":1}'), Buffer.from([0xc3])]));
    expect(outside.json().error.details).toEqual([
      { path: "body", message: expect.stringContaining("UTF-8") },
    ]);
  });

  it("a prototype-poisoning key is refused, never merged", async () => {
    const res = await post('{"__proto__": {"admin": true}}');
    expect(res.statusCode).toBe(400);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it("any other content type is a 415, text/plain included", async () => {
    const res = await post("hello", "text/plain");
    expect([res.statusCode, res.json().error.code]).toEqual([415, "unsupported_media_type"]);
  });
});
