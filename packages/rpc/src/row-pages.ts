import type { DescField, DescMessage, MessageShape } from "@bufbuild/protobuf";
import { ScalarType } from "@bufbuild/protobuf";
import {
  coalescedByKey,
  type FiltersOf,
  type KeysetList,
  keysetPage,
  type ListPage,
  listPage,
} from "@funil/db";
import { check, isoString, parseTimestamptz, type z } from "@funil/schemas";
import { codecOf, STRUCT, struct, tagOf, Writer } from "./codec.js";

/**
 * List pages written as protobuf straight from the bytes PostgreSQL sent: no row object, no string,
 * no Date, no message per row. A keyset page of 50 contacts read as objects costs crm the driver's
 * parsing (a string per column, a Date per timestamp, JSON and array parsing), a message literal per
 * row, the timestamps formatted again and every string encoded back to UTF-8; read as raw rows
 * (postgres.js `.raw()`: each column's text bytes) it costs the statement alone, and the page is
 * written by copying bytes (bench/RESULTS.md).
 *
 * Each field of the row's message comes from the column of the same name (the pool camel-cases
 * column names), in PostgreSQL's text format:
 * - text, varchar, uuid → a string field, the bytes as they came (the connection's client_encoding is
 *   UTF8, so PostgreSQL sends valid UTF-8);
 * - timestamptz → a string field holding the API's ISO 8601 form (`2026-11-25T10:00:00.120Z`), written
 *   from PostgreSQL's `2026-11-25 10:00:00.12+00`; any other form (another time zone, microseconds, a
 *   year past 9999) is parsed and formatted as the object path does (parseTimestamptz, isoString);
 * - text[] → a repeated string field;
 * - jsonb → a google.protobuf.Struct field, or a message field whose JSON keys are its field names;
 * - bigint, or text holding an integer (a bigint cast `::text`) → an int64 field; integer, smallint → an
 *   int32 field.
 * What a field does with a NULL or an empty value is what the message literal of the object path
 * does: NULL leaves any field unset, an empty string leaves an implicit-presence field unset.
 *
 * A column with no field of that name is skipped (workspace_id); a field with no column, or a column
 * type a field cannot take, is an error when the page's plan is made (at the list's first page). A page
 * the fast path cannot write (an array with a NULL element, JSON that is not an object, anything that
 * throws) is answered `undefined`, and the caller reads it again as objects.
 */

/** A row as postgres.js gives it in raw mode: each column's text bytes, null for NULL. */
export type RawRow = ReadonlyArray<Buffer | null>;

/** postgres.js' raw result: the rows, and the statement's columns (names as the pool transformed them). */
export type RawRows = RawRow[] & {
  readonly columns: ReadonlyArray<{ readonly name: string; readonly type: number }>;
};

/** PostgreSQL's type OIDs (pg_type) of the columns a row page reads. */
const OID = {
  int8: 20,
  int2: 21,
  int4: 23,
  text: 25,
  json: 114,
  textArray: 1009,
  bpchar: 1042,
  varchar: 1043,
  timestamptz: 1184,
  uuid: 2950,
  jsonb: 3802,
} as const;

const TEXT_TYPES: ReadonlySet<number> = new Set([OID.text, OID.varchar, OID.bpchar, OID.uuid]);

const LEN = 2; // the length-delimited wire type
const VARINT = 0;

/** Writes one non-NULL column into its field; false when the page must take the object path. */
type Put = (w: Writer, b: Buffer) => boolean;

interface Step {
  column: number;
  put: Put;
}

/** `n` bytes of `b` from `from`, behind their length. */
function putBytes(w: Writer, b: Buffer, from: number, to: number) {
  const n = to - from;
  w.uint32(n);
  w.ensure(n);
  const buf = w.buf;
  if (n < 48) {
    let p = w.pos;
    for (let i = from; i < to; i++) buf[p++] = b[i]!;
    w.pos = p;
  } else {
    b.copy(buf, w.pos, from, to);
    w.pos += n;
  }
}

const isDigit = (c: number | undefined) => c !== undefined && c >= 48 && c <= 57;

/** Where PostgreSQL's ISO timestamp puts digits: YYYY-MM-DD HH:MM:SS. */
const DIGITS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];

/**
 * PostgreSQL's text of a timestamptz in UTC (DateStyle ISO: `YYYY-MM-DD HH:MM:SS[.f{1,3}]+00`) as the
 * 24 bytes of Date#toISOString, or false for any other form.
 */
export function writeIsoFromPostgres(w: Writer, b: Buffer): boolean {
  const n = b.length;
  const fraction = n - 22; // 0, or a dot and 1 to 3 digits
  if (fraction < 0 || fraction === 1 || fraction > 4) return false;
  if (b[4] !== 45 || b[7] !== 45 || b[10] !== 32 || b[13] !== 58 || b[16] !== 58) return false;
  if (b[n - 3] !== 43 || b[n - 2] !== 48 || b[n - 1] !== 48) return false;
  for (const i of DIGITS) if (!isDigit(b[i])) return false;
  if (fraction > 0) {
    if (b[19] !== 46) return false;
    for (let i = 20; i < n - 3; i++) if (!isDigit(b[i])) return false;
  }
  w.ensure(25);
  const buf = w.buf;
  let p = w.pos;
  buf[p++] = 24;
  for (let i = 0; i < 19; i++) buf[p++] = b[i]!;
  buf[p - 9] = 84; // T
  buf[p++] = 46; // .
  for (let i = 0; i < 3; i++) buf[p++] = i < fraction - 1 ? b[20 + i]! : 48;
  buf[p++] = 90; // Z
  w.pos = p;
  return true;
}

const putTimestamp =
  (tag: number): Put =>
  (w, b) => {
    w.uint32(tag);
    if (!writeIsoFromPostgres(w, b)) w.string(isoString(parseTimestamptz(b.toString("latin1"))));
    return true;
  };

const putText =
  (tag: number, implicit: boolean): Put =>
  (w, b) => {
    if (implicit && b.length === 0) return true;
    w.uint32(tag);
    putBytes(w, b, 0, b.length);
    return true;
  };

/**
 * A one-dimensional text[] literal (`{a,"b c","d\"e"}`) as one field per element; false for a NULL
 * element or a nested array.
 */
export function writeTextArray(w: Writer, tag: number, b: Buffer): boolean {
  const end = b.length - 1;
  if (b[0] !== 123 || b[end] !== 125) return false;
  let i = 1;
  if (i === end) return true;
  for (;;) {
    w.uint32(tag);
    if (b[i] === 34) {
      // Quoted: a backslash escapes the byte after it.
      const at = w.fork();
      w.ensure(end - i);
      const buf = w.buf;
      let p = w.pos;
      for (i++; i < end && b[i] !== 34; i++) {
        if (b[i] === 92) i++;
        buf[p++] = b[i]!;
      }
      w.pos = p;
      if (b[i] !== 34) return false;
      i++;
      w.join(at);
    } else {
      const from = i;
      while (i < end && b[i] !== 44) i++;
      // PostgreSQL quotes an element that is empty, spelled NULL or holds a brace: unquoted, it is a NULL or a nested array.
      if (b[from] === 123 || (i - from === 4 && b.toString("latin1", from, i).toUpperCase() === "NULL"))
        return false;
      putBytes(w, b, from, i);
    }
    if (i === end) return true;
    if (b[i] !== 44) return false;
    i++;
  }
}

const isEmptyObject = (b: Buffer) => b.length === 2 && b[0] === 123 && b[1] === 125;

/** A JSON object column, parsed (undefined when it is not an object). */
function objectOf(b: Buffer): Record<string, unknown> | undefined {
  const v: unknown = JSON.parse(b.toString("utf8"));
  return v !== null && typeof v === "object" && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

/** A jsonb object column as a message field: `{}` an empty message, any other object through `write`. */
const putJsonObject =
  (tag: number, write: (w: Writer, json: Record<string, unknown>) => void): Put =>
  (w, b) => {
    w.uint32(tag);
    if (isEmptyObject(b)) {
      w.uint32(0);
      return true;
    }
    const json = objectOf(b);
    if (!json) return false;
    write(w, json);
    return true;
  };

const putStruct = (tag: number) =>
  putJsonObject(tag, (w, json) => {
    const at = w.fork();
    struct.encode(w, json as Parameters<typeof struct.encode>[1]);
    w.join(at);
  });

/** A message whose fields are the object's keys (what `{ $typeName, ...json }` would encode). */
const putJsonMessage = (tag: number, message: DescMessage) =>
  putJsonObject(tag, (w, json) =>
    w.bytes(codecOf(message).encode({ $typeName: message.typeName, ...json } as MessageShape<DescMessage>)),
  );

const INTEGER = /^-?\d{1,19}$/;

const putInt32 =
  (tag: number, implicit: boolean): Put =>
  (w, b) => {
    const text = b.toString("latin1");
    const v = Number(text);
    if (!INTEGER.test(text) || (v | 0) !== v) return false;
    if (implicit && v === 0) return true;
    w.uint32(tag);
    w.int32(v);
    return true;
  };

const putInt64 =
  (tag: number, implicit: boolean): Put =>
  (w, b) => {
    const text = b.toString("latin1");
    if (!INTEGER.test(text)) return false;
    // PostgreSQL writes a zero as "0" (never -0 or 00): no BigInt made per row to tell.
    if (implicit && text === "0") return true;
    w.uint32(tag);
    w.int64(text);
    return true;
  };

const IMPLICIT = 2; // google.protobuf.FeatureSet.FieldPresence.IMPLICIT

/** How a column of type `oid` fills field `f`, or why it cannot. */
function putOf(f: DescField, oid: number): Put | string {
  const implicit = f.presence === IMPLICIT;
  if (f.fieldKind === "scalar" && f.scalar === ScalarType.STRING) {
    if (oid === OID.timestamptz) return putTimestamp(tagOf(f.number, LEN));
    if (TEXT_TYPES.has(oid)) return putText(tagOf(f.number, LEN), implicit);
  }
  if (f.fieldKind === "scalar" && f.scalar === ScalarType.INT64 && (oid === OID.text || oid === OID.int8))
    return putInt64(tagOf(f.number, VARINT), implicit);
  if (f.fieldKind === "scalar" && f.scalar === ScalarType.INT32 && (oid === OID.int4 || oid === OID.int2))
    return putInt32(tagOf(f.number, VARINT), implicit);
  if (
    f.fieldKind === "list" &&
    f.listKind === "scalar" &&
    f.scalar === ScalarType.STRING &&
    oid === OID.textArray
  ) {
    const tag = tagOf(f.number, LEN);
    return (w, b) => writeTextArray(w, tag, b);
  }
  if (f.fieldKind === "message" && (oid === OID.jsonb || oid === OID.json))
    return f.message.typeName === STRUCT
      ? putStruct(tagOf(f.number, LEN))
      : putJsonMessage(tagOf(f.number, LEN), f.message);
  return `column ${f.localName} (type ${oid}) cannot fill field ${f.localName} (${f.fieldKind})`;
}

/** Each field of `message` in field-number order, from its column of `columns`. */
function planOf(message: DescMessage, columns: RawRows["columns"]): Step[] {
  const byName = new Map(columns.map((c, i) => [c.name, i]));
  return [...message.fields]
    .sort((a, b) => a.number - b.number)
    .map((f) => {
      const column = byName.get(f.localName);
      if (column === undefined) throw new Error(`${message.typeName}.${f.localName} has no column`);
      const put = putOf(f, columns[column]!.type);
      if (typeof put === "string") throw new Error(`${message.typeName}: ${put}`);
      return { column, put };
    });
}

/** Row pages are written one at a time, synchronously: one scratch buffer serves them all. */
const writer = new Writer();

/**
 * The writer of one list's pages: `response` is its reply (a repeated message field of the rows, and
 * `next_cursor`). `write(rows, columns, nextCursor)` gives the reply's bytes, or undefined when a value
 * needs the object path.
 */
export function rowPageWriter(response: DescMessage) {
  const data = response.fields.find((f) => f.fieldKind === "list" && f.listKind === "message");
  const cursor = response.fields.find((f) => f.localName === "nextCursor");
  if (data?.fieldKind !== "list" || data.listKind !== "message" || !cursor)
    throw new Error(`${response.typeName} is no list page (a repeated message and next_cursor)`);
  const row = data.message;
  const dataTag = tagOf(data.number, LEN);
  const cursorTag = tagOf(cursor.number, LEN);
  // postgres.js keeps one columns array per prepared statement (and connection): one plan each.
  const plans = new WeakMap<RawRows["columns"], Step[]>();
  const stepsOf = (columns: RawRows["columns"]) => {
    let steps = plans.get(columns);
    if (!steps) {
      steps = planOf(row, columns);
      plans.set(columns, steps);
    }
    return steps;
  };
  return {
    write(
      rows: ReadonlyArray<RawRow>,
      columns: RawRows["columns"],
      nextCursor: string | undefined,
    ): Uint8Array | undefined {
      const steps = stepsOf(columns);
      const w = writer;
      w.pos = 0;
      try {
        for (let r = 0; r < rows.length; r++) {
          const values = rows[r]!;
          w.uint32(dataTag);
          const at = w.fork();
          for (const step of steps) {
            const b = values[step.column];
            if (b === null || b === undefined) continue;
            if (!step.put(w, b)) {
              w.pos = 0;
              return undefined;
            }
          }
          w.join(at);
        }
        if (nextCursor !== undefined) {
          w.uint32(cursorTag);
          w.string(nextCursor);
        }
        return w.finish();
      } catch {
        w.pos = 0;
        return undefined;
      }
    },
  };
}

const ENCODED = Symbol("funil.rpc.encoded");

/**
 * A reply already encoded (a row page): the server's fast path sends the bytes as they are; anything
 * else that reads the message (the Connect adapter, an interceptor) gets its fields, decoded from the
 * bytes on first read.
 */
export function encodedMessage<D extends DescMessage>(schema: D, bytes: Uint8Array): MessageShape<D> {
  let decoded: Record<string, unknown> | undefined;
  const message: Record<string | symbol, unknown> = { $typeName: schema.typeName, [ENCODED]: bytes };
  for (const f of schema.fields)
    Object.defineProperty(message, f.localName, {
      enumerable: true,
      get: () => {
        decoded ??= codecOf(schema).decode(bytes) as Record<string, unknown>;
        return decoded[f.localName];
      },
    });
  return message as MessageShape<D>;
}

/** The bytes of a reply made by encodedMessage, else undefined. */
export const encodedBytesOf = (message: object): Uint8Array | undefined =>
  (message as { [ENCODED]?: Uint8Array })[ENCODED];

/** A statement not yet run (postgres.js' PendingQuery): awaited, its rows as objects; `.raw()`, as bytes. */
export interface RawReadable<R> extends PromiseLike<R[]> {
  raw(): PromiseLike<unknown>;
}

/**
 * A keyset list (packages/db keysetList) whose pages are written from raw rows (rowPageWriter), with
 * the list's object path kept for the pages that need it.
 */
export interface RowList<S extends z.ZodType<{ cursor?: string | undefined; limit: number }>, F, R, M>
  extends Omit<KeysetList<S, F, R, M>, "fetch"> {
  /** The reply's message type: a repeated message field of the rows, and next_cursor. */
  response: DescMessage;
  /** `take` rows of the workspace after `after`, in the list's order: the statement, not yet run. */
  statement: (
    workspaceId: string,
    filters: F,
    take: number,
    after: [Date, string] | undefined,
  ) => RawReadable<unknown>;
  /** The object path's rows, when they are not the statement's rows as postgres.js reads them. */
  fetch?: KeysetList<S, F, R, M>["fetch"];
  /** The column (as the rows name it) of the timestamp the list is ordered by. */
  sortColumn: (filters: F) => string;
}

/** One writer per reply type: its plans are per statement, whichever list asks. */
const writers = new WeakMap<DescMessage, ReturnType<typeof rowPageWriter>>();

/**
 * A list handler (as keysetList's) answering each page as the bytes of its reply (encodedMessage),
 * written from the statement's raw rows; a page the writer cannot write is read again as objects.
 */
export function rowList<
  S extends z.ZodType<{ cursor?: string | undefined; limit: number }>,
  R extends { id: string },
  M,
  F = FiltersOf<S>,
>(spec: RowList<S, F, R, M>): (workspaceId: string, plain: unknown) => Promise<ListPage<M>> {
  return async (workspaceId, plain) => rowListPage(spec, workspaceId, check(spec.query, plain, "query"));
}

/** A page a row list is asked for (rowListPage); the list's name names the list, in one process. */
interface PageAsked {
  // biome-ignore lint/suspicious/noExplicitAny: the lists of every type share the coalescing
  spec: RowList<any, any, any, any>;
  workspaceId: string;
  query: unknown;
}

const pagesAsked = coalescedByKey(
  ({ spec, workspaceId, query }: PageAsked) => readRowListPage(spec, workspaceId, query),
  ({ spec, workspaceId, query }) => JSON.stringify([spec.list, workspaceId, query]),
);

/**
 * One page of a row list from its checked query (as listPage, for a handler that checks more first). The
 * pages of a list asked the same (workspace, filters, cursor and limit) in one turn of the event loop, the
 * calls of one RPC batch, are one page, read and written once (coalescedByKey: the statement starts after
 * all of them arrived); its bytes are sent to each, and changed by none.
 */
export function rowListPage<
  S extends z.ZodType<{ cursor?: string | undefined; limit: number }>,
  R extends { id: string },
  M,
  F,
>(spec: RowList<S, F, R, M>, workspaceId: string, query: z.output<S>): Promise<ListPage<M>> {
  return pagesAsked({ spec, workspaceId, query }) as Promise<ListPage<M>>;
}

async function readRowListPage<
  S extends z.ZodType<{ cursor?: string | undefined; limit: number }>,
  R extends { id: string },
  M,
  F,
>(spec: RowList<S, F, R, M>, workspaceId: string, query: z.output<S>): Promise<ListPage<M>> {
  let writer = writers.get(spec.response);
  if (!writer) {
    writer = rowPageWriter(spec.response);
    writers.set(spec.response, writer);
  }
  const { cursor, limit, ...given } = query;
  const filters = spec.bind ? spec.bind(given as FiltersOf<S>) : (given as F);
  const sortColumn = spec.sortColumn(filters);
  let columns: RawRows["columns"] = [];
  let sortAt = -1;
  let idAt = -1;
  const { rows, nextCursor } = await keysetPage<RawRow>({
    list: spec.list,
    workspaceId,
    filters: filters as Record<string, unknown>,
    cursor,
    limit,
    defaultLimit: spec.defaultLimit,
    sortKey: (row) => parseTimestamptz(row[sortAt]!.toString("latin1")),
    idOf: (row) => row[idAt]!.toString("utf8"),
    fetch: async (take, after) => {
      const raw = (await spec.statement(workspaceId, filters, take, after).raw()) as RawRows;
      columns = raw.columns;
      sortAt = columns.findIndex((c) => c.name === sortColumn);
      idAt = columns.findIndex((c) => c.name === "id");
      return raw;
    },
  });
  const bytes = writer.write(rows, columns, nextCursor);
  if (bytes) return encodedMessage(spec.response, bytes) as unknown as ListPage<M>;
  const fetch = spec.fetch ?? (async (...args) => (await spec.statement(...args)) as R[]);
  return listPage({ ...spec, fetch }, workspaceId, query);
}
