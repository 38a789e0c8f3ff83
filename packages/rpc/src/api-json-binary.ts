import { isUtf8 } from "node:buffer";
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { type CallOptions, createContextKey, createContextValues } from "@connectrpc/connect";
import { codecOf, Reader, skipOrFail, struct, unsupported } from "./codec.js";
import { toApiJson } from "./json.js";

/**
 * A message's bytes straight to its API JSON, as UTF-8 (the text of toApiJson, then JSON.stringify): what
 * the gateway answers for a list page, without making the page's messages, mapping them to JSON objects and
 * serializing those. The fields are read as byte ranges of the message, then written in the descriptor's
 * order, strings copied byte for byte with JSON's escapes, into a buffer that is sent as it is.
 *
 * Why: those three steps make as many objects and strings as the page has values, a large share of the
 * gateway's CPU for a page of 50 contacts or 100 meetings; this way takes 0.5-0.7 of their time
 * (bench/RESULTS-codec.md).
 *
 * Exactness: the text is always the one the three steps give. Anything this reading does not take the
 * short way (a singular message that comes twice, which protobuf-es merges; a string whose bytes are not
 * UTF-8; a truncated or malformed message; a type with bytes, map or 64-bit-as-string fields) is read the
 * long way instead, which answers the same text or throws the decoder's own error. api-json-binary.test.ts
 * holds the two equal for any message of every contract type and for random bytes.
 */
export type ApiJsonOfBinary = (bytes: Uint8Array) => Buffer;

const MAX_DEPTH = 100; // the decoder's recursion limit
const STRUCT = "google.protobuf.Struct";

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

/** The JSON text being written, into one scratch buffer reused by every call (writing is synchronous). */
class JsonOut {
  buf = Buffer.allocUnsafe(64 * 1024);
  pos = 0;

  ensure(n: number) {
    if (this.pos + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  /** Bytes written ahead of time: a key with its quotes and colon, punctuation. */
  bytes(b: Uint8Array) {
    const n = b.length;
    this.ensure(n);
    const buf = this.buf;
    let p = this.pos;
    for (let i = 0; i < n; i++) buf[p++] = b[i]!;
    this.pos = p;
  }

  /** An ASCII text: a number, true, false, null. */
  ascii(text: string) {
    const n = text.length;
    this.ensure(n);
    const buf = this.buf;
    let p = this.pos;
    for (let i = 0; i < n; i++) buf[p++] = text.charCodeAt(i);
    this.pos = p;
  }

  /** Any text, as UTF-8: a Struct written by JSON.stringify. */
  utf8(text: string) {
    this.ensure(Buffer.byteLength(text));
    this.pos += this.buf.write(text, this.pos, "utf8");
  }

  byte(b: number) {
    this.ensure(1);
    this.buf[this.pos++] = b;
  }

  /** A string field's UTF-8 bytes `src[start, end)` as a JSON string, byte by byte with JSON's escapes. */
  string(src: Buffer, start: number, end: number) {
    this.ensure((end - start) * 6 + 2);
    const buf = this.buf;
    let p = this.pos;
    buf[p++] = 0x22;
    for (let i = start; i < end; i++) {
      const b = src[i]!;
      if (ESCAPED[b] === 0) buf[p++] = b;
      else {
        const esc = ESCAPES[b]!;
        for (let j = 0; j < esc.length; j++) buf[p++] = esc[j]!;
      }
    }
    buf[p++] = 0x22;
    this.pos = p;
  }

  /**
   * The bytes written, in a buffer of their own (the scratch buffer is kept for the next call), or undefined
   * when a string field's bytes were not UTF-8 (the decoder then decides).
   */
  finish(): Buffer | undefined {
    const written = this.buf.subarray(0, this.pos);
    const bytes = isUtf8(written) ? Buffer.from(written) : undefined;
    this.pos = 0;
    if (this.buf.length > 1024 * 1024) this.buf = Buffer.allocUnsafe(64 * 1024);
    return bytes;
  }
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

/** The Reader call that reads a non-string scalar (or enum) field's value, and how its value is written. */
function scalarRead(f: DescField): { read: string; text: (v: string) => string; zero: string } {
  const t =
    f.fieldKind === "enum" || (f.fieldKind === "list" && f.listKind === "enum") ? undefined : f.scalar;
  const enumZero = f.fieldKind === "enum" ? String(f.enum.values[0]?.number ?? 0) : "0";
  switch (t) {
    case undefined:
      return { read: "int32()", text: (v) => `String(${v})`, zero: enumZero };
    case ScalarType.BOOL:
      return { read: "bool()", text: (v) => `(${v} ? "true" : "false")`, zero: "false" };
    case ScalarType.DOUBLE:
      return { read: "double()", text: (v) => `$.num(${v})`, zero: "0" };
    case ScalarType.FLOAT:
      return { read: "float()", text: (v) => `$.num(${v})`, zero: "0" };
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64: {
      const read = { 3: "int64()", 4: "uint64()", 18: "sint64()", 6: "fixed64()", 16: "sfixed64()" }[t];
      return { read: read!, text: (v) => `String(Number(${v}))`, zero: "0" };
    }
    case ScalarType.INT32:
      return { read: "int32()", text: (v) => `String(${v})`, zero: "0" };
    case ScalarType.SINT32:
      return { read: "sint32()", text: (v) => `String(${v})`, zero: "0" };
    case ScalarType.SFIXED32:
      return { read: "sfixed32()", text: (v) => `String(${v})`, zero: "0" };
    case ScalarType.FIXED32:
      return { read: "fixed32()", text: (v) => `String(${v})`, zero: "0" };
    default:
      return { read: "uint32()", text: (v) => `String(${v})`, zero: "0" };
  }
}

const WIRE_OF: Record<string, number> = {
  "double()": 1,
  "fixed64()": 1,
  "sfixed64()": 1,
  "float()": 5,
  "fixed32()": 5,
  "sfixed32()": 5,
};
const wireOf = (read: string) => WIRE_OF[read] ?? 0;
const tagOf = (no: number, wire: number) => ((no << 3) | wire) >>> 0;

/** Every message type reachable from `root` (Struct aside), each once, numbered. */
function reachable(root: DescMessage): DescMessage[] {
  const all: DescMessage[] = [];
  const visit = (m: DescMessage) => {
    if (m.typeName === STRUCT || all.includes(m)) return;
    all.push(m);
    for (const f of m.fields)
      if (f.fieldKind === "message" || f.fieldKind === "list") if (f.message) visit(f.message);
  };
  visit(root);
  return all;
}

/**
 * The source of one type's function `jN(r, end, depth, o)`: first the fields' last values (strings and
 * messages as byte ranges, other scalars as read, Struct as decoded), then the JSON object in the
 * descriptor's order, every field present as toApiJson gives it.
 */
function writerOf(m: DescMessage, index: Map<DescMessage, number>, keys: Uint8Array[]): string {
  const head = [
    `function j${index.get(m)}(r, end, depth, o) {`,
    `if (depth > ${MAX_DEPTH}) $.longWay();`,
    "const b = r.buf;",
  ];
  const cases: string[] = [];
  const out: string[] = [];
  m.fields.forEach((f, i) => {
    keys.push(Buffer.from(`${i === 0 ? "{" : ","}${JSON.stringify(f.jsonName)}:`));
    const key = `o.bytes($.keys[${keys.length - 1}]);`;
    const ld = tagOf(f.number, 2);
    const message = f.fieldKind === "message" || f.fieldKind === "list" ? f.message : undefined;
    const nullOrZero = (zero: string) => (f.presence === 2 ? zero : '"null"');
    if (message?.typeName === STRUCT) {
      head.push(`let v${i};`);
      cases.push(`case ${ld}: v${i} = $.struct.decode(r, r.delimited(end), depth + 1, v${i}); break;`);
      out.push(key, `o.utf8(v${i} === undefined ? "null" : JSON.stringify(v${i}));`);
    } else if (message && f.fieldKind === "message") {
      head.push(`let s${i} = -1, e${i} = 0;`);
      cases.push(
        `case ${ld}: if (s${i} >= 0) $.longWay(); e${i} = r.delimited(end); s${i} = r.pos; r.pos = e${i}; break;`,
      );
      out.push(
        key,
        `if (s${i} < 0) o.ascii("null"); else { r.pos = s${i}; j${index.get(message)}(r, e${i}, depth + 1, o); }`,
      );
    } else if (message) {
      head.push(`const l${i} = [];`);
      cases.push(`case ${ld}: { const e = r.delimited(end); l${i}.push(r.pos, e); r.pos = e; break; }`);
      out.push(
        key,
        `o.byte(91); for (let i = 0; i < l${i}.length; i += 2) { if (i > 0) o.byte(44); r.pos = l${i}[i]; j${index.get(message)}(r, l${i}[i + 1], depth + 1, o); } o.byte(93);`,
      );
    } else if (f.scalar === ScalarType.STRING && f.fieldKind === "list") {
      head.push(`const l${i} = [];`);
      cases.push(`case ${ld}: { const e = r.delimited(end); l${i}.push(r.pos, e); r.pos = e; break; }`);
      out.push(
        key,
        `o.byte(91); for (let i = 0; i < l${i}.length; i += 2) { if (i > 0) o.byte(44); o.string(b, l${i}[i], l${i}[i + 1]); } o.byte(93);`,
      );
    } else if (f.scalar === ScalarType.STRING) {
      head.push(`let s${i} = -1, e${i} = 0;`);
      cases.push(`case ${ld}: e${i} = r.delimited(end); s${i} = r.pos; r.pos = e${i}; break;`);
      out.push(key, `if (s${i} >= 0) o.string(b, s${i}, e${i}); else o.ascii(${nullOrZero('"\\"\\""')});`);
    } else {
      const s = scalarRead(f);
      const wire = wireOf(s.read);
      if (f.fieldKind === "list") {
        head.push(`const l${i} = [];`);
        cases.push(`case ${tagOf(f.number, wire)}: l${i}.push(r.${s.read}); break;`);
        cases.push(
          `case ${ld}: { const e = r.delimited(end); while (r.pos < e) l${i}.push(r.${s.read}); if (r.pos !== e) $.longWay(); break; }`,
        );
        out.push(
          key,
          `o.byte(91); for (let i = 0; i < l${i}.length; i++) { if (i > 0) o.byte(44); o.ascii(${s.text(`l${i}[i]`)}); } o.byte(93);`,
        );
      } else {
        head.push(`let v${i};`);
        cases.push(`case ${tagOf(f.number, wire)}: v${i} = r.${s.read}; break;`);
        out.push(key, `o.ascii(v${i} === undefined ? ${nullOrZero(`"${s.zero}"`)} : ${s.text(`v${i}`)});`);
      }
    }
  });
  if (m.fields.length === 0) out.push("o.byte(123);");
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
    ...out,
    "o.byte(125);",
    "}",
  ].join("\n");
}

const out = new JsonOut();

function shortWay(schema: DescMessage): (r: Reader, end: number, depth: number, o: JsonOut) => void {
  const all = reachable(schema);
  const index = new Map(all.map((m, i) => [m, i]));
  const keys: Uint8Array[] = [];
  const source = [...all.map((m) => writerOf(m, index, keys)), "return j0;"].join("\n");
  return new Function("$", source)({ keys, num, longWay, skipOrFail, struct });
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
        out.pos = 0;
        return undefined;
      }
    };
  }
  shortWriters.set(schema, write);
  return write;
}
const shortWriters = new WeakMap<DescMessage, (bytes: Uint8Array) => Buffer | undefined>();

/** The API JSON text of a message of `schema` from its bytes: the short way when it is sure, else the long. */
export function apiJsonOfBinary(schema: DescMessage): ApiJsonOfBinary {
  const short = shortApiJsonOfBinary(schema);
  return (bytes) =>
    short(bytes) ?? Buffer.from(JSON.stringify(toApiJson(schema, codecOf(schema).decode(bytes) as never)));
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
