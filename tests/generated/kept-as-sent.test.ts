import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { newWorkspace } from "../helpers.js";
import { type Answer, loadDocument, type Operation, operations, poolOfParam, RUNS, send } from "./harness.js";
import { populatedWorkspace } from "./populate.js";
import { type Json, minimalValue, poolOf, resolve } from "./schema-arbitrary.js";

/*
 * What a client sends is what is kept, generated from the OpenAPI document so that a field or a route
 * that lands later is walked like the others: every free-text field of every body keeps any Unicode
 * text byte for byte and refuses what is not Unicode text (a lone surrogate, invalid UTF-8) with a 400
 * naming it; every timestamp refuses a day that does not exist; customFields objects valid for their
 * definitions come back as sent, on contacts and on deals.
 */
const doc = await loadDocument();
const ops = operations(doc).filter(
  (o) => !o.admin && o.body && (o.method === "POST" || o.method === "PATCH"),
);
const { ws, pools } = await populatedWorkspace(operations(doc));
// The learner routes answer only an operator workspace's key with platform.read.
const operator = await newWorkspace({
  name: "Kept as sent, platform",
  operator: true,
  scopes: ["platform.read"],
});
const keyOf = (o: Operation) => (o.path.startsWith("/api/v1/platform/") ? operator.key : ws.key);

let seq = 0;
let slots = 0;
const uniquePhone = () => `+55 41 9${String(Date.now()).slice(-6)}${String(++seq % 100).padStart(2, "0")}`;

/** A body the operation accepts, apart from what a test puts in it (an upsert needs a phone of its own). */
function baseBody(o: Operation): Record<string, unknown> {
  const body = minimalValue(o.body, doc, pools) as Record<string, unknown>;
  if (o.path === "/api/v1/contacts") body.phone = uniquePhone();
  // Each meeting in a slot of its own, so that a taken slot never stands in the way.
  if ("startAt" in body)
    body.startAt = new Date(Date.parse("2033-01-01T00:00:00Z") + ++slots * 1_800_000).toISOString();
  if (o.path === "/api/v1/webhooks")
    Object.assign(body, { url: "https://example.com/hook", events: ["contact.created"] });
  return body;
}

const pathOf = (o: Operation) =>
  o.path.replace(/\{([^}]+)\}/g, (_, name) => poolOfParam(o.path, name, pools)[0] ?? "x");

function call(o: Operation, body: string | Uint8Array): Promise<Answer> {
  return send(
    {
      method: o.method,
      path: pathOf(o),
      headers: { "content-type": "application/json" },
      body: body as string,
    },
    ws.key,
  );
}

/** The top-level string properties of a body (nullable ones too), with their schemas. */
function stringProps(o: Operation): Array<[string, Json]> {
  const schema = resolve(o.body, doc);
  return Object.entries<Json>(schema.properties ?? {}).flatMap(([name, sub]) => {
    const s = resolve(sub, doc);
    const variants: Json[] = (s.anyOf ?? s.oneOf ?? [s]).map((v: Json) => resolve(v, doc));
    const str = variants.find(
      (v) => v.type === "string" || (Array.isArray(v.type) && v.type.includes("string")),
    );
    return str ? [[name, str] as [string, Json]] : [];
  });
}

/**
 * Free text: kept as sent. Not free text: ids (a reference, judged by its target), fields with a format,
 * a pattern or a list of values, and the fields the API reads rather than keeps (phone and e-mail, looked
 * up by their digits and lower case; url, an address; currency, upper-cased).
 */
const isFreeText = (name: string, s: Json) =>
  !s.format &&
  !s.pattern &&
  !s.enum &&
  !poolOf(name, pools) &&
  !/(Id|Ids|Key)$/.test(name) &&
  !/^(phone|email|url|currency|cpf|timezone)$/.test(name);

/**
 * The field in an answer: most answer with the resource, a webhook with {subscription, secret}, and a
 * deal shows its utmSource… inside its utm object.
 */
const fieldOf = (answer: Answer, name: string) => {
  const utm = /^utm([A-Z])(.*)$/.exec(name);
  if (utm) return answer.json?.utm?.[`${utm[1]!.toLowerCase()}${utm[2]}`];
  return answer.json?.[name] ?? answer.json?.subscription?.[name];
};

/** Unicode text of every kind: astral, combining, right-to-left, controls, ends that look blank. */
const unicodeText = (max: number) =>
  fc
    .oneof(
      fc.string({ unit: "grapheme", maxLength: 12 }),
      fc.string({ unit: "binary", maxLength: 12 }),
      fc.constantFrom(
        "😀👩‍👩‍👧",
        "e\u0301\u0327",
        "مرحبا بالعالم",
        "\u202Eabc\u202C",
        "𝔘𝔫𝔦\u{10FFFF}",
        "\uFFFD\uFEFF",
      ),
    )
    // A NUL is refused (PostgreSQL text has none), and a value is kept between two letters so that the
    // rules on blank or trimmed text say nothing here.
    .map((s) => `x${s.replaceAll("\u0000", "")}x`)
    .filter((s) => s.length <= max);

/**
 * Operations that set their text once: cancelling a cancelled meeting is idempotent and keeps the first
 * reason, so a second text cannot come back (the first does: tests/e2e/scheduling.test.ts).
 */
const SET_ONCE = new Set(["POST /api/v1/appointments/{id}/cancel"]);

const bodyOps = ops.filter((o) => stringProps(o).length > 0);
/** The operations whose free text was round-tripped (checked at the end: the main ones must be). */
const roundTripped = new Set<string>();

describe.each(bodyOps.map((o) => [`${o.method} ${o.path}`, o] as const))("kept as sent: %s", (_, o) => {
  const props = stringProps(o);
  const free = props.filter(([name, s]) => isFreeText(name, s));

  it("docs/api/conventions.md §Text is kept as sent: every string field refuses a lone surrogate and invalid UTF-8, with a 400 naming it", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...props.map(([name]) => name)),
        fc.integer({ min: 0xd800, max: 0xdfff }),
        fc.constantFrom([0xff], [0xc3], [0xed, 0xa0, 0x80], [0xe0, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80]),
        fc.boolean(),
        async (name, surrogate, bytes, asBytes) => {
          const marker = "MARKER";
          const text = JSON.stringify({ ...baseBody(o), [name]: `a${marker}b` });
          const body = asBytes
            ? (() => {
                const raw = Buffer.from(text, "utf8");
                const at = raw.indexOf(marker);
                return Buffer.concat([
                  raw.subarray(0, at),
                  Buffer.from(bytes),
                  raw.subarray(at + marker.length),
                ]);
              })()
            : text.replace(marker, `\\u${surrogate.toString(16)}`);
          const answer = await call(o, body as Uint8Array);
          const what = `${name} ${asBytes ? bytes : surrogate.toString(16)}: ${answer.text.slice(0, 300)}`;
          expect(answer.status, what).toBe(400);
          expect(answer.json?.error?.code, what).toBe("validation_failed");
          expect(
            answer.json?.error?.details?.map((d: Json) => d.path),
            what,
          ).toEqual([`body.${name}`]);
        },
      ),
      { numRuns: RUNS * 2 },
    );
  });

  // Operations without free text, or whose text is set once and kept (SET_ONCE), have no such test.
  if (free.length > 0 && !SET_ONCE.has(`${o.method} ${o.path}`))
    it("docs/api/conventions.md §Text is kept as sent: every free-text field keeps any Unicode text as sent (astral, combining, RTL)", async () => {
      const first = await call(o, JSON.stringify({ ...baseBody(o), [free[0]![0]]: "plain" }));
      // An operation whose smallest body needs more than the document says (a free slot) is left out here.
      if (first.status >= 400) return;
      roundTripped.add(`${o.method} ${o.path}`);
      await fc.assert(
        fc.asyncProperty(
          fc
            .constantFrom(...free)
            .chain(([name, s]) => unicodeText(s.maxLength ?? 200).map((v) => [name, v] as const)),
          async ([name, value]) => {
            const answer = await call(o, JSON.stringify({ ...baseBody(o), [name]: value }));
            const what = `${name}=${JSON.stringify(value)}: ${answer.text.slice(0, 300)}`;
            expect(answer.status, what).toBeLessThan(300);
            expect(fieldOf(answer, name), what).toBe(value);
          },
        ),
        { numRuns: RUNS * 2 },
      );
    });
});

it("the free text of contacts, deals, tasks, notes and webhooks was round-tripped", () => {
  for (const route of [
    "POST /api/v1/contacts",
    "PATCH /api/v1/contacts/{id}",
    "POST /api/v1/opportunities",
    "PATCH /api/v1/opportunities/{id}",
    "POST /api/v1/tasks",
    "PATCH /api/v1/tasks/{id}",
    "POST /api/v1/notes",
    "POST /api/v1/webhooks",
  ])
    expect([...roundTripped]).toContain(route);
});

it("the generator found the free-text fields of contacts, deals, tasks, notes and webhooks", () => {
  const found = bodyOps.flatMap((o) =>
    stringProps(o)
      .filter(([name, s]) => isFreeText(name, s))
      .map(([name]) => `${o.method} ${o.path} ${name}`),
  );
  for (const field of [
    "POST /api/v1/contacts company",
    "PATCH /api/v1/contacts/{id} notes",
    "POST /api/v1/opportunities title",
    "PATCH /api/v1/opportunities/{id} lossReason",
    "POST /api/v1/tasks title",
    "POST /api/v1/notes body",
    "POST /api/v1/webhooks description",
  ])
    expect(found).toContain(field);
});

/** A day that does not exist: the 29th of February of a common year, or past a month's last day. */
const impossibleDay = fc
  .tuple(fc.integer({ min: 1, max: 9999 }), fc.integer({ min: 1, max: 12 }), fc.nat())
  .map(([year, month, pick]) => {
    const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
    const last = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
    const day = last + 1 + (pick % (32 - last));
    return `${String(year).padStart(4, "0")}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
  });

const timestampFields = operations(doc)
  .filter((o) => !o.admin)
  .flatMap((o) => [
    ...o.parameters
      .filter((p: Json) => p.in === "query" && resolve(p.schema, doc).format === "date-time")
      .map((p: Json) => ({ o, where: "query", name: p.name as string })),
    ...(o.body ? Object.entries<Json>(resolve(o.body, doc).properties ?? {}) : [])
      .filter(([, s]) =>
        [resolve(s, doc), ...(resolve(s, doc).anyOf ?? [])].some(
          (v: Json) => resolve(v, doc).format === "date-time",
        ),
      )
      .map(([name]) => ({ o, where: "body", name })),
  ]);

describe.each(timestampFields.map((f) => [`${f.o.method} ${f.o.path} ${f.where}.${f.name}`, f] as const))(
  "timestamps: %s",
  (_, { o, where, name }) => {
    it("docs/api/conventions.md §Timestamps: a timestamp on a day that does not exist is a 400 naming it", async () => {
      await fc.assert(
        fc.asyncProperty(
          impossibleDay,
          fc.constantFrom("T00:00:00Z", "T12:30:00.000-03:00", "T23:59:59+14:00"),
          async (day, time) => {
            const value = `${day}${time}`;
            const answer =
              where === "query"
                ? await send({ method: o.method, path: pathOf(o), query: [[name, value]] }, keyOf(o))
                : await call(o, JSON.stringify({ ...baseBody(o), [name]: value }));
            const what = `${value}: ${answer.text.slice(0, 300)}`;
            expect(answer.status, what).toBe(400);
            expect(
              answer.json?.error?.details?.map((d: Json) => d.path),
              what,
            ).toContain(`${where}.${name}`);
          },
        ),
        { numRuns: RUNS },
      );
    });
  },
);

it("the generator found the timestamps of deals, tasks, appointments and the lists", () => {
  const names = timestampFields.map((f) => `${f.o.method} ${f.o.path} ${f.where}.${f.name}`);
  for (const field of [
    "POST /api/v1/opportunities body.expectedCloseAt",
    "GET /api/v1/contacts query.createdAfter",
    "POST /api/v1/appointments body.startAt",
  ])
    expect(names).toContain(field);
});

/*
 * customFields: any object valid for the workspace's definitions comes back byte for byte, keys and
 * values, on every resource that has them; a PATCH merges key by key and a null removes the key.
 */
const TYPES = ["text", "number", "boolean", "date", "select"] as const;
const keyShapes = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,20}$/);
const definitionKeys = [
  "plan_type",
  "Plan_Type",
  "a__b",
  "x_1",
  "camelCase",
  "UPPER_SNAKE",
  ...fc.sample(keyShapes, { numRuns: 10 }),
].filter((k, i, all) => all.indexOf(k) === i && k !== "plan");
const definitions = definitionKeys.map((fieldKey, i) => ({ fieldKey, type: TYPES[i % TYPES.length]! }));
for (const entity of ["contact", "opportunity"])
  for (const d of definitions) {
    const res = await ws.admin("POST", `/workspaces/${ws.id}/custom-fields`, {
      entity,
      fieldKey: d.fieldKey,
      label: d.fieldKey,
      type: d.type,
      ...(d.type === "select" ? { options: ["one", "two_b", "Três"] } : {}),
    });
    if (res.status !== 201)
      throw new Error(`custom field ${d.fieldKey}: ${res.status} ${JSON.stringify(res.body)}`);
  }

const calendarDay = fc
  .date({ min: new Date("0001-01-01T00:00:00Z"), max: new Date("9999-12-31T00:00:00Z"), noInvalidDate: true })
  .map((d) => d.toISOString().slice(0, 10));
const valuesOf: Record<(typeof TYPES)[number], fc.Arbitrary<unknown>> = {
  text: unicodeText(200),
  number: fc.double({ noNaN: true, noDefaultInfinity: true }),
  boolean: fc.boolean(),
  date: calendarDay,
  select: fc.constantFrom("one", "two_b", "Três"),
};
const customFields = fc
  .subarray(definitions, { minLength: 1 })
  .chain((defs) => fc.tuple(...defs.map((d) => valuesOf[d.type].map((v) => [d.fieldKey, v] as const))))
  .map((entries) => Object.fromEntries(entries) as Record<string, unknown>);
/** What JSON makes of a value (-0 is written 0). */
const asJson = (v: unknown) => JSON.parse(JSON.stringify(v));

describe.each([
  ["contacts", "/contacts", () => ({ phone: uniquePhone() })],
  [
    "opportunities",
    "/opportunities",
    () => ({ title: "Kept", contactId: pools.contacts![0], pipelineId: pools.pipelines![0] }),
  ],
] as const)("customFields of %s", (_, path, base) => {
  it("docs/api/conventions.md §Text is kept as sent: any customFields valid for the definitions round-trips byte for byte (create, read, PATCH)", async () => {
    await fc.assert(
      fc.asyncProperty(customFields, customFields, fc.nat(), async (first, second, drop) => {
        const made = await ws.call("POST", path, { ...base(), customFields: first });
        const what = JSON.stringify(made.body).slice(0, 400);
        expect(made.status, what).toBe(201);
        expect(made.body.customFields, what).toEqual(asJson(first));
        const read = await ws.call("GET", `${path}/${made.body.id}`);
        expect(read.body.customFields).toEqual(asJson(first));
        // The second object's keys set or replace, one key of the first is removed with null.
        const removed = Object.keys(first)[drop % Object.keys(first).length]!;
        const change = { ...second, [removed]: null };
        const patched = await ws.call("PATCH", `${path}/${made.body.id}`, { customFields: change });
        const expected = asJson({ ...first, ...second });
        delete expected[removed];
        expect(patched.status, JSON.stringify(patched.body).slice(0, 400)).toBe(200);
        expect(patched.body.customFields).toEqual(expected);
        expect((await ws.call("GET", `${path}/${made.body.id}`)).body.customFields).toEqual(expected);
      }),
      { numRuns: RUNS },
    );
  });
});
