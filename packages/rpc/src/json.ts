import {
  create,
  type DescField,
  type DescMessage,
  type MessageInitShape,
  type MessageShape,
  ScalarType,
} from "@bufbuild/protobuf";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function scalar(v: unknown): Json {
  if (typeof v === "bigint") return Number(v);
  if (v === undefined) return null;
  return v as Json;
}

const isJsonMessage = (m: DescMessage) =>
  m.typeName === "google.protobuf.Struct" || m.typeName === "google.protobuf.Value";

/**
 * A message as the public API shows it: camelCase keys, every field present,
 * an unset optional field or message as null, int64 as a number, Struct as
 * plain JSON. One mapping for every resource, used by the gateway's answers
 * and by the services' event payloads alike.
 */
export function toApiJson<D extends DescMessage>(schema: D, message: MessageShape<D>): Record<string, Json> {
  const out: Record<string, Json> = {};
  const m = message as unknown as Record<string, unknown>;
  for (const field of schema.fields) {
    const value = m[field.localName];
    switch (field.fieldKind) {
      case "list":
        out[field.jsonName] = ((value as unknown[]) ?? []).map((item) =>
          field.listKind === "message" ? toApiJson(field.message, item as never) : scalar(item),
        );
        break;
      case "message":
        if (value === undefined || value === null) out[field.jsonName] = null;
        else if (isJsonMessage(field.message)) out[field.jsonName] = value as Json;
        else out[field.jsonName] = toApiJson(field.message, value as never);
        break;
      case "map":
        out[field.jsonName] = Object.fromEntries(
          Object.entries((value as Record<string, unknown>) ?? {}).map(([k, v]) => [
            k,
            field.mapKind === "message" ? toApiJson(field.message, v as never) : scalar(v),
          ]),
        );
        break;
      default:
        out[field.jsonName] = scalar(value);
    }
  }
  return out;
}

const is64 = (field: DescField) =>
  (field.fieldKind === "scalar" || (field.fieldKind === "list" && field.listKind === "scalar")) &&
  /INT64/.test(ScalarType[field.scalar as ScalarType]);

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
          : is64(field)
            ? BigInt(item as number)
            : item,
      );
    else if (field.fieldKind === "message")
      init[field.localName] = isJsonMessage(field.message) ? value : fromApiJson(field.message, value);
    else if (field.fieldKind === "map") init[field.localName] = value;
    else init[field.localName] = is64(field) ? BigInt(value as number) : value;
  }
  return create(schema, init as MessageInitShape<D>);
}

/**
 * A written record's wire forms, each computed at most once per record: the
 * message for the reply and the API JSON for its event and for a remembered
 * Idempotency-Key result. A write asks for the JSON first (its event, inside
 * the transaction), which keeps the message for the reply; a read only wants
 * the message and keeps nothing.
 */
export function wireOf<R extends object, D extends DescMessage>(
  schema: D,
  toProto: (r: R) => MessageShape<D>,
) {
  const written = new WeakMap<R, { proto: MessageShape<D>; json: Record<string, Json> }>();
  return {
    proto: (r: R) => written.get(r)?.proto ?? toProto(r),
    json: (r: R) => {
      let e = written.get(r);
      if (!e) {
        const proto = toProto(r);
        e = { proto, json: toApiJson(schema, proto) };
        written.set(r, e);
      }
      return e.json;
    },
  };
}
