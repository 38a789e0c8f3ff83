import fc from "fast-check";
import { type Operation, poolOfParam, type Sent } from "./harness.js";
import { type Json, nastyBodies, nastyValues, type Pools, resolve, validValue } from "./schema-arbitrary.js";

const JSON_TYPE = { "content-type": "application/json" };
const text = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));

/** Query or header parameters as strings, the required ones always, the others sometimes. */
function params(o: Operation, where: string, doc: Json, pools: Pools): fc.Arbitrary<Record<string, string>> {
  const list = o.parameters.filter((p) => p.in === where);
  const model: Record<string, fc.Arbitrary<string>> = {};
  for (const p of list) {
    model[p.name] = validValue(p.schema, doc, pools, p.name).map(text);
    // A cursor this list really issued, more often than a forged one.
    const cursors = p.name === "cursor" ? pools[`cursor ${o.path}`] : undefined;
    if (cursors?.length)
      model[p.name] = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...cursors) }, model[p.name]!);
  }
  const requiredKeys: string[] = list.filter((p) => p.required).map((p) => p.name);
  return fc.record(model, { requiredKeys }) as fc.Arbitrary<Record<string, string>>;
}

/** Requests a careful client would send to the operation (they may still name ids that do not exist). */
export function validRequest(o: Operation, doc: Json, pools: Pools): fc.Arbitrary<Sent> {
  const pathParams = o.parameters.filter((p) => p.in === "path");
  return fc
    .record({
      path: fc.tuple(
        ...pathParams.map((p) => {
          const ids = poolOfParam(o.path, p.name, pools);
          // "." and ".." cannot be sent as a path segment: URL parsers remove dot-segments (RFC 3986 §5.2.4),
          // so the request would reach another route.
          const any = validValue(p.schema, doc, {}, p.name)
            .map((v) => encodeURIComponent(text(v)))
            .filter(
              (v) => v !== "." && v !== ".." && v.toLowerCase() !== "%2e" && v.toLowerCase() !== "%2e%2e",
            );
          return ids.length ? fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...ids) }, any) : any;
        }),
      ),
      query: params(o, "query", doc, pools),
      headers: params(o, "header", doc, pools),
      body: o.body ? validValue(o.body, doc, pools) : fc.constant(undefined),
    })
    .map(({ path, query, headers, body }) => {
      let i = 0;
      const sent: Sent = {
        method: o.method,
        path: o.path.replace(/\{[^}]+\}/g, () => path[i++] as string),
        query: Object.entries(query) as Array<[string, string]>,
        headers: { ...headers },
      };
      if (body !== undefined) {
        sent.body = JSON.stringify(body);
        Object.assign(sent.headers!, JSON_TYPE);
      }
      return sent;
    });
}

const NASTY_PATH = [
  "%00",
  "a%00b",
  "x".repeat(3000),
  "%ZZ",
  "%ED%A0%80",
  "%2E%2E",
  "%2F",
  "%20",
  "%F0%9F%98%80",
  "0",
];
const ODD_TYPES = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/json; charset=utf-16",
  "application/merge-patch+json",
  "application/JSON",
  "",
];

type Mutation = (s: Sent, pick: number, value: unknown) => Sent;
const asText = (v: unknown) => (typeof v === "string" ? v : (JSON.stringify(v) ?? "undefined"));
const at = <T>(list: T[], pick: number) => list[pick % list.length] as T;

/**
 * Requests a client should not send: one thing wrong with a valid one (a field of the wrong type or
 * out of its limits, NUL, a lone surrogate, deep nesting, a huge number, an unknown or missing field,
 * a forged cursor, an odd content type, a malformed path).
 */
export function invalidRequest(o: Operation, doc: Json, pools: Pools): fc.Arbitrary<Sent> {
  const bodySchema = o.body ? resolve(o.body, doc) : undefined;
  const props = Object.keys(bodySchema?.properties ?? {});
  const required: string[] = bodySchema?.required ?? [];
  const queryNames = o.parameters.filter((p) => p.in === "query").map((p) => p.name as string);
  const pathNames = o.parameters.filter((p) => p.in === "path").map((p) => p.name as string);
  const withBody = (s: Sent, body: string, type = "application/json"): Sent => ({
    ...s,
    body,
    headers: { ...s.headers, "content-type": type },
  });
  const parsed = (s: Sent) => (s.body ? JSON.parse(s.body) : {});
  const mutations: Mutation[] = [
    (s, pick) => withBody(s, at(nastyBodies, pick)),
    (s, pick) => withBody(s, s.body ?? "{}", at(ODD_TYPES, pick)),
    (s) => withBody(s, ""),
    (s, _, value) =>
      queryNames.length ? s : { ...s, query: [...(s.query ?? []), ["unknownFilter", asText(value)]] },
    (s, pick, value) => {
      if (!queryNames.length) return withBody(s, JSON.stringify({ ...parsed(s), unknownField: value }));
      const name = at(queryNames, pick);
      return { ...s, query: [...(s.query ?? []).filter(([k]) => k !== name), [name, asText(value)]] };
    },
    (s, pick) => {
      const name = queryNames.length ? at(queryNames, pick) : "limit";
      return { ...s, query: [...(s.query ?? []), [name, "1"], [name, "2"]] };
    },
    (s, pick) => {
      if (!pathNames.length) return s;
      const segments = s.path.split("/");
      const params = o.path.split("/").flatMap((part, i) => (part.startsWith("{") ? [i] : []));
      segments[at(params, pick)] = at(NASTY_PATH, pick);
      return { ...s, path: segments.join("/") };
    },
  ];
  if (props.length)
    mutations.push(
      (s, pick, value) => withBody(s, JSON.stringify({ ...parsed(s), [at(props, pick)]: value })),
      (s, _, value) => withBody(s, JSON.stringify({ ...parsed(s), unknownField: value })),
      (s, pick) => {
        if (!required.length) return s;
        const body = parsed(s);
        delete body[at(required, pick)];
        return withBody(s, JSON.stringify(body));
      },
    );
  return fc
    .tuple(validRequest(o, doc, pools), fc.nat(), fc.nat(), fc.constantFrom(...nastyValues))
    .map(([s, which, pick, value]) => at(mutations, which)(s, pick, value));
}
