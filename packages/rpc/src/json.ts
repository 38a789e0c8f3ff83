import {
  create,
  type DescField,
  type DescMessage,
  type MessageInitShape,
  type MessageShape,
  ScalarType,
} from "@bufbuild/protobuf";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const isJsonMessage = (m: DescMessage) =>
  m.typeName === "google.protobuf.Struct" || m.typeName === "google.protobuf.Value";

const isLong = (field: DescField) =>
  (field.fieldKind === "scalar" || (field.fieldKind === "list" && field.listKind === "scalar")) &&
  /INT64/.test(ScalarType[field.scalar as ScalarType]);

/** A scalar as JSON: int64 (a bigint) as a number, unset as null. */
const scalarJson = (field: DescField, v: string) =>
  isLong(field)
    ? `(typeof ${v} === "bigint" ? Number(${v}) : ${v} === undefined ? null : ${v})`
    : `(${v} === undefined ? null : ${v})`;

/**
 * The source of one message type's mapping to API JSON: an object literal
 * with every field, in the order of the descriptor (so every answer of a type
 * has one shape), nested types through their own functions.
 */
function mapperSource(schema: DescMessage, fnOf: (m: DescMessage) => string): string {
  const parts = schema.fields.map((field) => {
    const key = JSON.stringify(field.jsonName);
    const v = `m[${JSON.stringify(field.localName)}]`;
    const nested = (item: string) =>
      isJsonMessage(field.message!) ? item : `${fnOf(field.message!)}(${item})`;
    switch (field.fieldKind) {
      case "list":
        return `${key}: (${v} ?? []).map((x) => ${field.listKind === "message" ? nested("x") : scalarJson(field, "x")})`;
      case "message":
        return `${key}: ${v} === undefined || ${v} === null ? null : ${nested(v)}`;
      case "map":
        return `${key}: $.mapJson(${v}, (x) => ${field.mapKind === "message" ? nested("x") : scalarJson(field, "x")})`;
      default:
        return `${key}: ${scalarJson(field, v)}`;
    }
  });
  return `(m) => ({ ${parts.join(", ")} })`;
}

type Mapper = (message: unknown) => Record<string, Json>;
const mappers = new WeakMap<DescMessage, Mapper>();
const mapJson = (value: Record<string, unknown> | undefined, item: (v: unknown) => Json) =>
  Object.fromEntries(Object.entries(value ?? {}).map(([k, v]) => [k, item(v)]));

/** The mapping of a message type, generated on first use (see toApiJson). */
function mapperOf(schema: DescMessage): Mapper {
  let mapper = mappers.get(schema);
  if (!mapper) {
    const nested: DescMessage[] = [];
    const fnOf = (m: DescMessage) => {
      if (!nested.includes(m)) nested.push(m);
      return `n${nested.indexOf(m)}`;
    };
    const source = mapperSource(schema, fnOf);
    // Nested types are looked up when first called, so a type that contains itself is no loop here.
    const bindings = nested
      .map((_, i) => `let f${i}; const n${i} = (x) => (f${i} ??= $.of(${i}))(x);`)
      .join("\n");
    mapper = new Function("$", `${bindings}\nreturn ${source};`)({
      mapJson,
      of: (i: number) => mapperOf(nested[i]!),
    }) as Mapper;
    mappers.set(schema, mapper);
  }
  return mapper;
}

/**
 * A message as the public API shows it: camelCase keys, every field present,
 * an unset optional field or message as null, int64 as a number, Struct as
 * plain JSON. One mapping for every resource, used by the gateway's answers
 * and by the services' event payloads alike. Each message type's mapping is
 * generated from its descriptor once (a list of 50 contacts walked the
 * descriptor 50 times, json.test.ts holds the two equal).
 */
export function toApiJson<D extends DescMessage>(schema: D, message: MessageShape<D>): Record<string, Json> {
  return mapperOf(schema)(message);
}

/**
 * A page of messages as the API's JSON array, written by the service that read them (a list request's
 * `api_json`): the gateway sends it on as it comes, with no decoding, mapping or serializing of its own.
 */
export function apiJsonArray<D extends DescMessage>(schema: D, messages: readonly MessageShape<D>[]): string {
  const map = mapperOf(schema);
  return JSON.stringify(messages.map((m) => map(m)));
}

/**
 * A page's API JSON, written once for the calls that shared its rows: a store that coalesces the reads
 * asked the same in one turn (coalescedByKey in @funil/db) gives them the same array of rows, and the
 * same rows make the same page. Kept only as long as those rows are.
 */
const pagesJson = new WeakMap<readonly object[], string>();
export function pageJsonOnce(rows: readonly object[], write: () => string): string {
  let json = pagesJson.get(rows);
  if (json === undefined) {
    json = write();
    pagesJson.set(rows, json);
  }
  return json;
}

/** The inverse of toApiJson: what a service remembered as API JSON, as the message again. */
export function fromApiJson<D extends DescMessage>(schema: D, json: unknown): MessageShape<D> {
  const source = (json ?? {}) as Record<string, unknown>;
  const init: Record<string, unknown> = {};
  for (const field of schema.fields) {
    const value = source[field.jsonName];
    if (value === null || value === undefined) continue;
    if (field.fieldKind === "list")
      init[field.localName] = (value as unknown[]).map((item) =>
        field.listKind === "message"
          ? fromApiJson(field.message, item)
          : isLong(field)
            ? BigInt(item as number)
            : item,
      );
    else if (field.fieldKind === "message")
      init[field.localName] = isJsonMessage(field.message) ? value : fromApiJson(field.message, value);
    else if (field.fieldKind === "map") init[field.localName] = value;
    else init[field.localName] = isLong(field) ? BigInt(value as number) : value;
  }
  return create(schema, init as MessageInitShape<D>);
}

/**
 * A written record's wire forms, each computed at most once per record: the
 * message for the reply and the API JSON for its event and for a remembered
 * Idempotency-Key result. A write asks for the JSON first (its event, inside
 * the transaction), which keeps the message for the reply; a read only wants
 * the message and keeps nothing. `text`, the API JSON written out, is for a
 * record kept in memory (keptRecords in @funil/db) whose list is answered
 * as JSON: written once, answered as it is at every read.
 */
export function wireOf<R extends object, D extends DescMessage>(
  schema: D,
  toProto: (r: R) => MessageShape<D>,
) {
  const written = new WeakMap<R, { proto: MessageShape<D>; json: Record<string, Json>; text?: string }>();
  const formsOf = (r: R) => {
    let e = written.get(r);
    if (!e) {
      const proto = toProto(r);
      e = { proto, json: toApiJson(schema, proto) };
      written.set(r, e);
    }
    return e;
  };
  return {
    proto: (r: R) => written.get(r)?.proto ?? toProto(r),
    json: (r: R) => formsOf(r).json,
    text: (r: R) => {
      const e = formsOf(r);
      e.text ??= JSON.stringify(e.json);
      return e.text;
    },
  };
}

/**
 * A whole list's answer from records kept in memory: with `apiJson` (the gateway's ask) each record's id and
 * its API JSON, written once per record (`wire.text`), which the gateway pages and sends on; without it, the
 * messages (what a gateway of the version before reads, during a roll).
 */
export function listAnswer<R extends { id: string }, M>(
  wire: { proto: (r: R) => M; text: (r: R) => string },
  records: readonly R[],
  apiJson: boolean,
): { ids: string[]; itemsJson: string[] } | { data: M[] } {
  return apiJson
    ? { ids: records.map((r) => r.id), itemsJson: records.map(wire.text) }
    : { data: records.map(wire.proto) };
}
