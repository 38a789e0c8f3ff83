import { create, type DescField, type DescMessage, type MessageShape, ScalarType } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";

/**
 * Requests as plain objects and back, keyed by the API's field names. Proto3
 * cannot tell "sent as null" from "absent", so a message that carries a PATCH
 * lists its nulls in a `clear` field; these two functions are the only place
 * that knows it (the gateway encodes, the service decodes).
 */

type Json = unknown;

const isWrapperList = (field: DescField) =>
  field.fieldKind === "message" &&
  field.message.fields.length === 1 &&
  field.message.fields[0]?.fieldKind === "list" &&
  field.message.fields[0]?.localName === "values";

const isStruct = (field: DescField) =>
  field.fieldKind === "message" &&
  (field.message.typeName === "google.protobuf.Struct" || field.message.typeName === "google.protobuf.Value");

/** Int64 travels as bigint; the API's money is a JSON number (checked to be safe by the rules). */
function fromProto(field: DescField, value: unknown): Json {
  if (typeof value === "bigint") return Number(value);
  if (isWrapperList(field)) return (value as { values: unknown[] }).values;
  return value;
}

/**
 * A request message as the object its HTTP twin would carry: set fields by
 * their API names, `clear` names as null, proto3 zero values of fields without
 * presence left out (they are what "not sent" looks like on the wire).
 * `omit` drops fields that are not the caller's to send (workspaceId).
 */
export function plainOf<D extends DescMessage>(
  schema: D,
  message: MessageShape<D>,
  omit: readonly string[] = ["workspaceId"],
): Record<string, Json> {
  const m = message as unknown as Record<string, unknown>;
  const out: Record<string, Json> = {};
  for (const field of schema.fields) {
    const name = field.localName;
    if (name === "clear" || omit.includes(name)) continue;
    const value = m[name];
    if (value === undefined) continue;
    if (field.fieldKind === "scalar" && field.presence === FeatureSet_FieldPresence.IMPLICIT) {
      if (value === "" || value === 0 || value === 0n || value === false) continue;
    }
    if (field.fieldKind === "list" && (value as unknown[]).length === 0) continue;
    if (field.fieldKind === "message" && !isStruct(field) && !isWrapperList(field))
      out[field.jsonName] = plainOf(field.message, value as never, []);
    else out[field.jsonName] = fromProto(field, value);
  }
  if (Array.isArray(m.clear)) for (const name of m.clear as string[]) out[name] = null;
  return out;
}

/** The inverse of fromProto: a JSON value as the proto field holds it. */
function toProto(field: DescField, value: unknown): unknown {
  if (field.fieldKind === "scalar" && typeof value === "number" && /INT64/.test(ScalarType[field.scalar]))
    return BigInt(value);
  if (isWrapperList(field)) return create(field.message as DescMessage, { values: value as never });
  return value;
}

/**
 * A JSON body as a proto message: a value sets the field, an explicit null
 * names it in the message's `clear` list (a PATCH), an absent key leaves it
 * untouched (docs/api/contacts.md §PATCH /contacts/{id}). Keys the message lacks are ignored: the
 * gateway's schema has refused them already.
 */
export function messageOf<D extends DescMessage>(schema: D, body: Record<string, unknown>): MessageShape<D> {
  const message = create(schema) as MessageShape<D> & { clear?: string[] };
  const target = message as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(body)) {
    if (value === undefined) continue;
    if (value === null) {
      message.clear?.push(key);
      continue;
    }
    const field = schema.fields.find((f) => f.jsonName === key);
    if (field) target[field.localName] = toProto(field, value);
  }
  return message;
}
