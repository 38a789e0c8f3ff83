import type { ErrorDetail } from "@funil/errors";

export type FieldType = "text" | "number" | "boolean" | "date" | "select";
export interface FieldDefinition {
  fieldKey: string;
  type: FieldType;
  options: string[];
}

/**
 * A calendar date as YYYY-MM-DD, a day that exists (2024-02-29 does, 2023-02-29 and 2024-04-31 do not),
 * years 0001 to 9999. A time or an offset is refused: the field holds a day, and the day of an instant
 * depends on a time zone the value would not carry.
 */
export function isCalendarDate(value: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
  return day <= days;
}

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
      return typeof value === "string" && isCalendarDate(value)
        ? undefined
        : "must be a calendar date YYYY-MM-DD that exists";
    case "select":
      return typeof value === "string" && def.options.includes(value)
        ? undefined
        : `must be one of: ${def.options.join(", ")}`;
  }
}

/**
 * Checks customFields against the entity's definitions (docs/api/contacts.md §Contact): every key
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
