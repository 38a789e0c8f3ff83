import type { DescMessage, MessageShape } from "@bufbuild/protobuf";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function scalar(v: unknown): Json {
  if (typeof v === "bigint") return Number(v);
  if (v === undefined) return null;
  return v as Json;
}

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
        else if (
          field.message.typeName === "google.protobuf.Struct" ||
          field.message.typeName === "google.protobuf.Value"
        )
          out[field.jsonName] = value as Json;
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
