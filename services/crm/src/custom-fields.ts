import type { ErrorDetail } from "@funil/errors";

export type FieldType = "text" | "number" | "boolean" | "date" | "select";
export interface FieldDefinition {
  fieldKey: string;
  type: FieldType;
  options: string[];
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

function typeError(def: FieldDefinition, value: unknown): string | undefined {
  switch (def.type) {
    case "text":
      return typeof value === "string" && value.length <= 10_000
        ? undefined
        : "must be a string (at most 10000 characters)";
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? undefined : "must be a number";
    case "boolean":
      return typeof value === "boolean" ? undefined : "must be a boolean";
    case "date":
      return typeof value === "string" && ISO_DATE.test(value) && !Number.isNaN(Date.parse(value))
        ? undefined
        : "must be an ISO-8601 date";
    case "select":
      return typeof value === "string" && def.options.includes(value)
        ? undefined
        : `must be one of: ${def.options.join(", ")}`;
  }
}

/**
 * Checks customFields against the entity's definitions (API.md §5): every key
 * must be the fieldKey of a definition and every value must match its type.
 * A null value is allowed where the caller means "remove this key".
 */
export function checkCustomFields(
  values: Record<string, unknown>,
  definitions: FieldDefinition[],
): ErrorDetail[] {
  const byKey = new Map(definitions.map((d) => [d.fieldKey, d]));
  const problems: ErrorDetail[] = [];
  for (const [key, value] of Object.entries(values)) {
    const def = byKey.get(key);
    const path = `customFields.${key}`;
    if (!def) {
      problems.push({ path, message: `unknown custom field "${key}": no definition for this entity` });
      continue;
    }
    if (value === null) continue;
    const error = typeError(def, value);
    if (error) problems.push({ path, message: `${key} ${error}` });
  }
  return problems;
}

/** Merges key by key; a null value removes the key. */
export function mergeCustomFields(current: Record<string, unknown>, changes: Record<string, unknown>) {
  const next: Record<string, unknown> = { ...current };
  for (const [k, v] of Object.entries(changes)) {
    if (v === null) delete next[k];
    else next[k] = v;
  }
  return next;
}
