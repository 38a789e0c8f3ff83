import { isUtf8 } from "node:buffer";
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { type CallOptions, createContextKey, createContextValues } from "@connectrpc/connect";
import {
  codecOf,
  is64,
  MAX_DEPTH,
  Reader,
  reachable,
  STRUCT,
  scalarOf,
  scalars,
  skipOrFail,
  struct,
  tagOf,
  unsupported,
} from "./codec.js";
import { toApiJson } from "./json.js";

/**
 * A message's bytes straight to its API JSON, as UTF-8 (what toApiJson, then JSON.stringify give): what
 * the gateway answers for a list page, without making the page's messages, mapping them to JSON objects and
 * serializing those. The fields are read as byte ranges of the message, then written in the descriptor's
 * order, strings copied byte for byte with JSON's escapes, and the bytes are sent as they are.
 *
 * Why: those three steps make as many objects and strings as the page has values; on a page of 50
 * contacts they were a fifth of the gateway's CPU, and the gateway's CPU per page fell from 679 to 542 µs
 * (bench/RESULTS-codec.md).
 *
 * Exactness: the text is always the one the three steps give. Anything this reading does not take the
 * short way (a singular message that comes twice, which protobuf-es merges; a string whose bytes are not
 * UTF-8; a truncated or malformed message; a type with bytes, map or 64-bit-as-string fields) is read the
 * long way instead, which answers the same text or throws the decoder's own error. api-json-binary.test.ts
 * holds the two equal for any message of every contract type and for random bytes.
 */
export type ApiJsonOfBinary = (bytes: Uint8Array) => Buffer;

/** The short way cannot be sure of the answer: the long way decides. */
class TakeTheLongWay extends Error {}
const longWay = (): never => {
  throw new TakeTheLongWay();
};

/** The bytes JSON.stringify escapes (below 0x20, `"` and `\\`): 1 where a byte is not copied as is. */
const ESCAPED = Uint8Array.from({ length: 256 }, (_, b) => (b < 0x20 || b === 0x22 || b === 0x5c ? 1 : 0));
/** Each escaped byte's escape, as JSON.stringify writes it (`\\n`, `\\u001f`). */
const ESCAPES = Array.from({ length: 256 }, (_, b) =>
  ESCAPED[b] ? Buffer.from(JSON.stringify(String.fromCharCode(b)).slice(1, -1)) : Buffer.alloc(0),
);

/** Writes byte `b`'s escape at `p`; returns where it ends. */
function escaped(buf: Buffer, p: number, b: number): number {
  const esc = ESCAPES[b]!;
  for (let j = 0; j < esc.length; j++) buf[p++] = esc[j]!;
  return p;
}

const SLAB = 1024 * 1024;

/**
 * The JSON being written (writing is synchronous), into a slab shared by the answers that follow one
 * another, as Node's own Buffer pool does for small buffers: each answer is a view of its part of the
 * slab, and a slab is let go when it is full (it lives on while an answer still holds a view of it). A
 * buffer of its own per answer, or reading the text into a string, cost more than the writing
 * (bench/RESULTS-codec.md): a page is 20-80 KB.
 */
class JsonOut {
  buf = Buffer.allocUnsafe(SLAB);
  /** Where the answer being written starts. */
  start = 0;
  pos = 0;

  ensure(n: number) {
    if (this.pos + n <= this.buf.length) return;
    const written = this.pos - this.start;
    const next = Buffer.allocUnsafe(Math.max(SLAB, 2 * (written + n)));
    this.buf.copy(next, 0, this.start, this.pos);
    this.buf = next;
    this.start = 0;
    this.pos = written;
  }

  /** Any text, as UTF-8: a Struct written by JSON.stringify. */
  utf8(text: string) {
    this.ensure(Buffer.byteLength(text));
    this.pos += this.buf.write(text, this.pos, "utf8");
  }

  /** The answer written, or undefined when a string field's bytes were not UTF-8 (the decoder then decides). */
  finish(): Buffer | undefined {
    const written = this.buf.subarray(this.start, this.pos);
    // The next answer starts at a multiple of 8, as the pool's buffers do.
    this.start = this.pos = Math.min(this.buf.length, (this.pos + 7) & ~7);
    return isUtf8(written) ? written : undefined;
  }

  /** The answer being written is given up. */
  drop() {
    this.pos = this.start;
  }
}

/** An ASCII text (a number, true, false) at `buf[p]`; returns where it ends. The room was made. */
function ascii(buf: Buffer, p: number, text: string): number {
  for (let i = 0; i < text.length; i++) buf[p++] = text.charCodeAt(i);
  return p;
}

/**
 * A string field's UTF-8 bytes `src[start, end)` as a JSON string at `buf[p]`, byte by byte with JSON's
 * escapes; returns where it ends. The room was made.
 */
function string(buf: Buffer, p: number, src: Buffer, start: number, end: number): number {
  buf[p++] = 0x22;
  for (let i = start; i < end; i++) {
    const b = src[i]!;
    if (ESCAPED[b] === 0) buf[p++] = b;
    else p = escaped(buf, p, b);
  }
  buf[p++] = 0x22;
  return p;
}

/** A number as JSON.stringify writes it (NaN and the infinities as null). */
const num = (v: number) => (Number.isFinite(v) ? String(v) : "null");

/** Why a type is left to the long way, or undefined when every field it reaches has a short way. */
function longOnly(schema: DescMessage, seen = new Set<DescMessage>()): string | undefined {
  if (seen.has(schema) || schema.typeName === STRUCT) return undefined;
  seen.add(schema);
  for (const f of schema.fields) {
    if (f.fieldKind === "map") return `${f} is a map`;
    if ((f.fieldKind === "scalar" || f.fieldKind === "list") && f.scalar === ScalarType.BYTES)
      return `${f} is bytes`;
    if ("longAsString" in f && f.longAsString) return `${f} is a 64-bit integer as a string`;
    const message = f.fieldKind === "message" || f.fieldKind === "list" ? f.message : undefined;
    if (message) {
      if (message.typeName === STRUCT && f.fieldKind === "list") return `${f} is a list of Struct`;
      const why = longOnly(message, seen);
      if (why) return why;
    }
  }
  return undefined;
}

/**
 * How a non-string scalar (or enum) field's value is read (codec.ts' table: the Reader call and the wire
 * type), written, and what an implicit field that is not set shows.
 */
function scalarRead(f: DescField): { read: string; wire: number; text: (v: string) => string; zero: string } {
  const t = scalarOf(f);
  const { read, wire } = scalars[t];
  const text =
    t === ScalarType.BOOL
      ? (v: string) => `(${v} ? "true" : "false")`
      : t === ScalarType.DOUBLE || t === ScalarType.FLOAT
        ? (v: string) => `$.num(${v})`
        : is64(t)
          ? (v: string) => `String(Number(${v}))`
          : (v: string) => `String(${v})`;
  const zero =
    f.fieldKind === "enum" ? String(f.enum.values[0]?.number ?? 0) : t === ScalarType.BOOL ? "false" : "0";
  return { read, wire, text, zero };
}

/** Code that writes these ASCII bytes at `buf[p]` on: no call, no loop. */
const literal = (text: string) => [...Buffer.from(text)].map((c) => `buf[p++] = ${c};`).join(" ");

/** The most bytes a field's key and a value that has no bytes of its own (null, a zero, a number) take. */
const PER_FIELD = 24;

/**
 * The source of one type's function `jN(r, end, depth, o)`: first the fields' last values (strings and
 * messages as byte ranges, other scalars as read, Struct as decoded), then the JSON object in the
 * descriptor's order, every field present as toApiJson gives it. The writing makes room once for the
 * message's own part (its keys, and at most six bytes of JSON per byte read: an escape is six) and then
 * writes at a local position; a nested message or a Struct makes its own room, and the buffer is read again
 * after it.
 */
function writerOf(m: DescMessage, index: Map<DescMessage, number>): string {
  const head = [
    `function j${index.get(m)}(r, end, depth, o) {`,
    `if (depth > ${MAX_DEPTH}) $.longWay();`,
    "const b = r.buf;",
    "const from = r.pos;",
  ];
  const cases: string[] = [];
  const out: string[] = [];
  let room = 2;
  const after = "buf = o.buf; p = o.pos;";
  // A write past the end of a typed array is dropped without a word: were the room made too small, the
  // short way gives up instead of answering a truncated text.
  const sync = "if (p > buf.length) $.longWay(); o.pos = p;";
  m.fields.forEach((f, i) => {
    const keyText = `${i === 0 ? "{" : ","}${JSON.stringify(f.jsonName)}:`;
    room += Buffer.byteLength(keyText) + PER_FIELD;
    const key = literal(keyText);
    const ld = tagOf(f.number, 2);
    const message = f.fieldKind === "message" || f.fieldKind === "list" ? f.message : undefined;
    const nullOrZero = (zero: string) => literal(f.presence === 2 ? zero : "null");
    if (message?.typeName === STRUCT) {
      head.push(`let v${i};`);
      cases.push(`case ${ld}: v${i} = $.struct.decode(r, r.delimited(end), depth + 1, v${i}); break;`);
      out.push(
        key,
        `if (v${i} === undefined) { ${literal("null")} } else { ${sync} o.utf8(JSON.stringify(v${i})); ${after} }`,
      );
    } else if (message && f.fieldKind === "message") {
      head.push(`let s${i} = -1, e${i} = 0;`);
      cases.push(
        `case ${ld}: if (s${i} >= 0) $.longWay(); e${i} = r.delimited(end); s${i} = r.pos; r.pos = e${i}; break;`,
      );
      out.push(
        key,
        `if (s${i} < 0) { ${literal("null")} } else { r.pos = s${i}; ${sync} j${index.get(message)}(r, e${i}, depth + 1, o); ${after} }`,
      );
    } else if (message) {
      head.push(`const l${i} = [];`);
      cases.push(`case ${ld}: { const e = r.delimited(end); l${i}.push(r.pos, e); r.pos = e; break; }`);
      out.push(
        key,
        `buf[p++] = 91; for (let i = 0; i < l${i}.length; i += 2) { if (i > 0) buf[p++] = 44; r.pos = l${i}[i]; ${sync} j${index.get(message)}(r, l${i}[i + 1], depth + 1, o); ${after} } buf[p++] = 93;`,
      );
    } else if (f.scalar === ScalarType.STRING && f.fieldKind === "list") {
      head.push(`const l${i} = [];`);
      cases.push(`case ${ld}: { const e = r.delimited(end); l${i}.push(r.pos, e); r.pos = e; break; }`);
      out.push(
        key,
        `buf[p++] = 91; for (let i = 0; i < l${i}.length; i += 2) { if (i > 0) buf[p++] = 44; p = $.string(buf, p, b, l${i}[i], l${i}[i + 1]); } buf[p++] = 93;`,
      );
    } else if (f.scalar === ScalarType.STRING) {
      head.push(`let s${i} = -1, e${i} = 0;`);
      cases.push(`case ${ld}: e${i} = r.delimited(end); s${i} = r.pos; r.pos = e${i}; break;`);
      out.push(key, `if (s${i} >= 0) p = $.string(buf, p, b, s${i}, e${i}); else { ${nullOrZero('""')} }`);
    } else {
      const s = scalarRead(f);
      const wire = s.wire;
      if (f.fieldKind === "list") {
        head.push(`const l${i} = [];`);
        cases.push(`case ${tagOf(f.number, wire)}: l${i}.push(r.${s.read}); break;`);
        cases.push(
          `case ${ld}: { const e = r.delimited(end); while (r.pos < e) l${i}.push(r.${s.read}); if (r.pos !== e) $.longWay(); break; }`,
        );
        out.push(
          key,
          `buf[p++] = 91; for (let i = 0; i < l${i}.length; i++) { if (i > 0) buf[p++] = 44; p = $.ascii(buf, p, ${s.text(`l${i}[i]`)}); } buf[p++] = 93;`,
        );
      } else {
        head.push(`let v${i};`);
        cases.push(`case ${tagOf(f.number, wire)}: v${i} = r.${s.read}; break;`);
        out.push(
          key,
          `if (v${i} === undefined) { ${nullOrZero(s.zero)} } else p = $.ascii(buf, p, ${s.text(`v${i}`)});`,
        );
      }
    }
  });
  if (m.fields.length === 0) out.push(literal("{"));
  return [
    ...head,
    "while (r.pos < end) {",
    "const tag = r.uint32();",
    "switch (tag) {",
    ...cases,
    "default: $.skipOrFail(r, tag, end, depth);",
    "}",
    "}",
    "if (r.pos !== end) $.longWay();",
    `o.ensure(${room} + 6 * (end - from));`,
    "let buf = o.buf;",
    "let p = o.pos;",
    ...out,
    "buf[p++] = 125;",
    sync,
    "}",
  ].join("\n");
}

const out = new JsonOut();

function shortWay(schema: DescMessage): (r: Reader, end: number, depth: number, o: JsonOut) => void {
  const all = reachable(schema);
  const index = new Map(all.map((m, i) => [m, i]));
  const source = [...all.map((m) => writerOf(m, index)), "return j0;"].join("\n");
  return new Function("$", source)({ ascii, string, num, longWay, skipOrFail, struct });
}

/**
 * The short way alone: the API JSON text of a message of `schema` from its bytes, or undefined when the
 * short way cannot be sure of it (see apiJsonOfBinary) or the type has no short way.
 */
export function shortApiJsonOfBinary(schema: DescMessage): (bytes: Uint8Array) => Buffer | undefined {
  let write = shortWriters.get(schema);
  if (write) return write;
  if (unsupported(schema) || longOnly(schema)) write = () => undefined;
  else {
    const short = shortWay(schema);
    write = (bytes) => {
      try {
        const r = new Reader(bytes);
        short(r, bytes.byteLength, 0, out);
        return out.finish();
      } catch {
        // TakeTheLongWay, or the bytes are malformed: the decoder reads them, or throws its own error.
        out.drop();
        return undefined;
      }
    };
  }
  shortWriters.set(schema, write);
  return write;
}
const shortWriters = new WeakMap<DescMessage, (bytes: Uint8Array) => Buffer | undefined>();

const writers = new WeakMap<DescMessage, ApiJsonOfBinary>();

/**
 * The API JSON text of a message of `schema` from its bytes: the short way when it is sure, else the long.
 * Made once per type (the transport asks at every answer).
 */
export function apiJsonOfBinary(schema: DescMessage): ApiJsonOfBinary {
  let write = writers.get(schema);
  if (!write) {
    const short = shortApiJsonOfBinary(schema);
    write = (bytes) =>
      short(bytes) ?? Buffer.from(JSON.stringify(toApiJson(schema, codecOf(schema).decode(bytes) as never)));
    writers.set(schema, write);
  }
  return write;
}

/**
 * A call's context value (CallOptions.contextValues): the transport (unary-transport.ts) answers the reply
 * as its API JSON text instead of the message (apiJsonCall).
 */
export const ANSWER_AS_API_JSON = createContextKey(false, { description: "answer as API JSON text" });

const TEXT = Symbol("API JSON text");
/** What the transport answers in place of the message when asked ANSWER_AS_API_JSON. */
export const apiJsonText = (text: Buffer) => ({ [TEXT]: text });

/**
 * A call whose reply the caller sends on as the API's JSON: the text written straight from the reply's
 * bytes (apiJsonOfBinary), the message never made. For a list page whose answer is its reply's JSON.
 */
export async function apiJsonCall<Req>(
  call: (req: Req, options: CallOptions) => Promise<unknown>,
  req: Req,
): Promise<Buffer> {
  const res = await call(req, { contextValues: createContextValues().set(ANSWER_AS_API_JSON, true) });
  const text = (res as { [TEXT]?: Buffer })[TEXT];
  if (text === undefined) throw new Error("the transport did not answer the API JSON text it was asked for");
  return text;
}
