import { create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";

type Convert = (value: never) => unknown;

/**
 * A JSON body as a proto "fields" message (…Fields with a `clear` list): a
 * value sets the field, an explicit null names it in `clear`, an absent key
 * leaves it untouched (SPEC.md §4 PATCH). `convert` maps a value whose proto
 * type differs from its JSON one (tags → StringList, money → int64).
 */
export function setClearFields<D extends DescMessage>(
  schema: D,
  body: Record<string, unknown>,
  convert: Record<string, Convert> = {},
): MessageShape<D> {
  const fields = create(schema) as MessageShape<D> & { clear: string[] };
  const target = fields as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(body)) {
    if (value === null) fields.clear.push(key);
    else if (value !== undefined) target[key] = convert[key] ? convert[key](value as never) : value;
  }
  return fields;
}

export const stringList = (values: string[]) => ({ $typeName: "funil.crm.v1.StringList" as const, values });
