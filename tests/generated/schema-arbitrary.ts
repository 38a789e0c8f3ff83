import fc from "fast-check";

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema and JSON values are walked as plain JSON
export type Json = any;

/**
 * Ids that exist in the workspace under test, by the list they come from ("contacts", "members"…), so
 * generated requests reach past "not found" often enough to exercise the success paths too.
 */
export type Pools = Record<string, string[]>;

/** Parameters that name a resource without an Id suffix: GET /events' `after` is an event's id. */
const NAMED_WITHOUT_ID: Record<string, string> = { after: "events" };

/** The pool a field or parameter draws real ids from: `contactId` → contacts, `ownerUserId` → members. */
export function poolOf(name: string, pools: Pools): string[] | undefined {
  const named = NAMED_WITHOUT_ID[name];
  if (named !== undefined) return pools[named];
  const base = name.replace(/Ids?$/, "");
  // opportunityId → opportunities (an opportunityId that found no pool went unprobed).
  const plural = base.endsWith("s") ? base : base.endsWith("y") ? `${base.slice(0, -1)}ies` : `${base}s`;
  const key = /user$/i.test(base) ? "members" : plural;
  return name === base ? undefined : pools[key];
}

export function resolve(schema: Json, doc: Json): Json {
  let s = schema;
  while (s?.$ref)
    s = s.$ref
      .split("/")
      .slice(1)
      .reduce((node: Json, key: string) => node?.[key], doc);
  return s ?? {};
}

const EARLIEST = new Date("1990-01-01T00:00:00.000Z");
const LATEST = new Date("2090-01-01T00:00:00.000Z");

/** Valid values of a JSON Schema (the subset zod writes): what a careful client would send. */
export function validValue(
  schema: Json,
  doc: Json,
  pools: Pools,
  name = "",
  depth = 0,
): fc.Arbitrary<unknown> {
  const s = resolve(schema, doc);
  const variants = s.anyOf ?? s.oneOf;
  if (variants) return fc.oneof(...variants.map((v: Json) => validValue(v, doc, pools, name, depth)));
  if ("const" in s) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  if (Array.isArray(s.type))
    return fc.oneof(...s.type.map((t: string) => validValue({ ...s, type: t }, doc, pools, name, depth)));
  switch (s.type) {
    case "null":
      return fc.constant(null);
    case "boolean":
      return fc.boolean();
    case "integer":
      return fc.integer({
        min: s.minimum ?? -1_000_000,
        max: Math.min(s.maximum ?? 1_000_000, Number.MAX_SAFE_INTEGER),
      });
    case "number":
      return fc.double({
        min: s.minimum ?? -1e9,
        max: s.maximum ?? 1e9,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case "string":
      return validString(s, pools, name);
    case "array":
      return fc.array(validValue(s.items ?? {}, doc, pools, name, depth + 1), {
        minLength: s.minItems ?? 0,
        maxLength: Math.min(s.maxItems ?? 4, Math.max(s.minItems ?? 0, 4)),
      });
    case "object": {
      const props: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [key, sub] of Object.entries<Json>(s.properties ?? {}))
        props[key] = validValue(sub, doc, pools, key, depth + 1);
      const known = fc.record(props, { requiredKeys: s.required ?? [] });
      if (!s.additionalProperties || typeof s.additionalProperties !== "object" || depth > 3) return known;
      const extra = fc.dictionary(
        fc.stringMatching(/^[a-z][a-z0-9_]{0,15}$/),
        validValue(s.additionalProperties, doc, pools, "", depth + 1),
        { maxKeys: 3 },
      );
      return fc.tuple(known, extra).map(([k, e]) => ({ ...e, ...k }));
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function validString(s: Json, pools: Pools, name: string): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? 100;
  const fits = (v: string) => v.length >= min && v.length <= max && !v.includes("\u0000");
  let base: fc.Arbitrary<string>;
  if (s.format === "date-time")
    base = fc.date({ min: EARLIEST, max: LATEST, noInvalidDate: true }).map((d) => d.toISOString());
  else if (s.pattern) base = fc.stringMatching(new RegExp(s.pattern));
  // Fields whose rules live in the service, not in the schema: look like what they are, mostly.
  else if (s.format === "email" || /email/i.test(name))
    base = fc.oneof({ weight: 4, arbitrary: fc.emailAddress() }, fc.string({ maxLength: 20 }));
  else if (/phone/i.test(name))
    base = fc.oneof(
      { weight: 4, arbitrary: fc.stringMatching(/^\+?[0-9 ()-]{8,20}$/) },
      fc.string({ maxLength: 20 }),
    );
  else
    base = fc.oneof(
      fc.string({ unit: "grapheme", minLength: min, maxLength: Math.min(max, 40) }),
      fc.string({ unit: "binary-ascii", minLength: min, maxLength: Math.min(max, 40) }),
      fc.constant("x".repeat(Math.min(max, 10_000))).filter(() => min <= max),
    );
  const ids = poolOf(name, pools);
  const valid = base.filter(fits);
  return ids?.length
    ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...ids) }, { weight: 1, arbitrary: valid })
    : valid;
}

/** The smallest valid value: required properties only, real ids where a pool has them. */
export function minimalValue(schema: Json, doc: Json, pools: Pools, name = ""): unknown {
  const s = resolve(schema, doc);
  const variants = s.anyOf ?? s.oneOf;
  if (variants)
    return minimalValue(
      variants.find((v: Json) => resolve(v, doc).type !== "null") ?? variants[0],
      doc,
      pools,
      name,
    );
  if ("const" in s) return s.const;
  if (s.enum) return s.enum[0];
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== "null") : s.type;
  switch (type) {
    case "object":
      return Object.fromEntries(
        (s.required ?? []).map((key: string) => [
          key,
          minimalValue(s.properties?.[key] ?? {}, doc, pools, key),
        ]),
      );
    case "array":
      return Array.from({ length: s.minItems ?? 0 }, () => minimalValue(s.items ?? {}, doc, pools, name));
    case "string": {
      const ids = poolOf(name, pools);
      if (ids?.length) return ids[0];
      if (s.format === "date-time") return "2030-01-01T00:00:00.000Z";
      if (s.format === "email") return "someone@example.com";
      if (s.pattern) return fc.sample(fc.stringMatching(new RegExp(s.pattern)), { numRuns: 1, seed: 1 })[0];
      return "x".repeat(Math.max(s.minLength ?? 1, 1));
    }
    case "integer":
    case "number":
      return s.minimum ?? 0;
    case "boolean":
      return false;
    default:
      return null;
  }
}

/** A JSON text nested `depth` levels deep, built as text so that nothing here recurses over it. */
export const deepArray = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
export const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

/** Values no field of the API accepts everywhere: wrong types, limits, NUL, lone surrogates, huge numbers. */
export const nastyValues: unknown[] = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfffy",
  "😀".repeat(3000),
  "x".repeat(10_001),
  "' or 1=1 --",
  "../../etc/passwd",
  "%00",
  "0x10",
  "1e1",
  "NaN",
  "-0",
  "9999-12-31T23:59:59.999Z",
  "0000-01-01T00:00:00Z",
  "2026-02-30T00:00:00Z",
  1e308,
  -1e308,
  2 ** 64,
  -1,
  0.5,
  0,
  true,
  null,
  [],
  {},
  ["a", 1, null],
  { "\u0000": 1 },
  { __proto__x: 1, constructor: 1 },
];

/** Raw JSON texts for a body: nesting, numbers JSON.stringify cannot write, duplicate keys, junk. */
export const nastyBodies: string[] = [
  deepArray(40),
  deepArray(4000),
  deepObject(40),
  deepObject(6000),
  '{"a":1e999}',
  '{"a":-1e999}',
  "123456789012345678901234567890",
  '{"name":"a","name":"b"}',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  "{",
  "[]",
  "null",
  '"\\ud800"',
  '{"name":"\\u0000"}',
  "\ufeff{}",
];
