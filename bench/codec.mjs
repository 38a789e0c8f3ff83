// The hand-written protobuf codec of packages/rpc (codec.ts) against protobuf-es's own toBinary and
// fromBinary, on the messages of the hot routes: a contact, a page of 50 contacts, a page of 50 deals, an
// interactions page of 100 and a learners page of 50. Both ways in the same run, alternating in rounds,
// on the same messages; prints ns/op and the ratio (protobuf-es / hand-written) as a Markdown table.
// Then the list pages the gateway sends on as the API's JSON: the text written straight from the reply's
// bytes (api-json-binary.ts) against decode + toApiJson + JSON.stringify, which the gateway did before.
// The dated results live in bench/RESULTS-codec.md.
//
//   npm run build && npm run bench:codec
//   BENCH_ROUNDS=7 BENCH_MS=300     rounds, and the time each codec runs per round and message
//   BENCH_ONLY=<regex>              only the messages and pages whose name matches
//
// Encoding is measured as each side of a call does it: the hand-written encoder takes what a handler
// returns (a plain object in the message's init shape), protobuf-es needs a message made by create()
// first (unary-handler.ts calls create() for a type the hand-written codec does not cover), so its column
// is create() + toBinary(); toBinary() alone, of a message already made, is shown beside it. Decoding is fromBinary() against the hand-written decoder, both from the same
// bytes. The messages are filled field by field from their descriptors with values of realistic length
// (ids, e-mails, ISO times, names, a note of 200 characters, custom fields); the batch frames' calls
// carry a path, a 60-byte body and a traceparent header.
import os from "node:os";
import { create, fromBinary, ScalarType, toBinary } from "@bufbuild/protobuf";
import * as contracts from "@funil/contracts";
// protobuf-es writes strings the way the services configure it (Buffer.from instead of TextEncoder).
import "../packages/rpc/dist/text-encoding.js";
import { apiJsonOfBinary } from "../packages/rpc/dist/api-json-binary.js";
import { codecOf } from "../packages/rpc/dist/codec.js";
import { toApiJson } from "../packages/rpc/dist/json.js";

const rounds = Number(process.env.BENCH_ROUNDS ?? 7);
const msPerRound = Number(process.env.BENCH_MS ?? 300);
/** BENCH_ONLY=<regex>: only the messages and pages whose name matches. */
const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;

/** A plausible value for a string field, by its name. */
function text(name, i) {
  if (/(^|_)id$/.test(name)) return `ct_01m8an5zrj069wcnt786er${String(1000 + i).slice(-4)}`;
  if (/email/.test(name)) return `maria.souza${i}@example.com`;
  if (/phone/.test(name)) return `+55119888${String(10000 + i).slice(-5)}`;
  if (/_at$|date|time/.test(name)) return "2026-11-26T00:59:13.123Z";
  if (/cursor/.test(name)) return "eyJrIjoiMjAyNi0xMS0yNlQwMDo1OToxMy4xMjNaIiwiaSI6ImN0XzAxIn0.c2lnbmF0dXJl";
  if (/notes|body|text|description|summary|content|subject/.test(name))
    return "Ligou para saber do plano Pro, quer uma demonstração na semana que vem. ".repeat(3);
  if (name === "path") return "/funil.crm.v1.ContactService/GetContact";
  if (/url/.test(name)) return "https://example.com/landing?utm_source=google";
  if (/name|title|company/.test(name)) return `Maria Souza ${i}`;
  return `value-${i % 10}`;
}

function scalar(field, i) {
  switch (field.scalar) {
    case ScalarType.STRING:
      return text(field.name, i);
    case ScalarType.BOOL:
      return i % 2 === 0;
    case ScalarType.BYTES:
      return new Uint8Array(60).fill(7);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return 1234.5 + i;
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return BigInt(1_700_000_000_000 + i);
    default:
      return 3 + (i % 5);
  }
}

/** An init object of `schema` with every field set; the first repeated message field gets `count` items. */
function fill(schema, i, count = 2, depth = 0) {
  const out = {};
  let listed = false;
  for (const f of schema.fields) {
    if (f.oneof) continue;
    if (f.fieldKind === "scalar") out[f.localName] = scalar(f, i);
    else if (f.fieldKind === "enum") out[f.localName] = f.enum.values[1]?.number ?? 0;
    else if (f.fieldKind === "map")
      out[f.localName] = { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" };
    else if (f.fieldKind === "message") {
      if (f.message.typeName === "google.protobuf.Struct")
        out[f.localName] = { plan: "pro", seats: 3, paid: true, tags: ["a", "b"] };
      else if (depth < 3) out[f.localName] = fill(f.message, i, 2, depth + 1);
    } else if (f.fieldKind === "list") {
      if (f.listKind === "scalar") out[f.localName] = [scalar(f, i), scalar(f, i + 1)];
      else if (f.listKind === "enum") out[f.localName] = [f.enum.values[1]?.number ?? 0];
      else if (depth < 3) {
        const n = listed ? 2 : count;
        listed = true;
        out[f.localName] = Array.from({ length: n }, (_, k) => fill(f.message, i + k, 2, depth + 1));
      }
    }
  }
  return out;
}

const CASES = [
  { name: "a contact (GetContactResponse)", schema: contracts.GetContactResponseSchema, count: 1 },
  { name: "50 contacts (ListContactsResponse)", schema: contracts.ListContactsResponseSchema, count: 50 },
  {
    name: "50 deals (ListOpportunitiesResponse)",
    schema: contracts.ListOpportunitiesResponseSchema,
    count: 50,
  },
  {
    name: "100 interactions (ListInteractionsResponse)",
    schema: contracts.ListInteractionsResponseSchema,
    count: 100,
  },
  { name: "50 learners (ListLearnersResponse)", schema: contracts.ListLearnersResponseSchema, count: 50 },
  {
    name: "a contact's read, asked (GetContactRequest)",
    schema: contracts.GetContactRequestSchema,
    count: 1,
  },
  { name: "a batch frame of 8 calls (CallRequest)", schema: contracts.CallRequestSchema, count: 8 },
  { name: "its 8 answers (CallResponse)", schema: contracts.CallResponseSchema, count: 8 },
];

/** ns per call of `fn` over about `ms` milliseconds. */
function time(fn, ms) {
  let n = 0;
  const start = process.hrtime.bigint();
  const until = start + BigInt(Math.round(ms * 1e6));
  let now = start;
  while (now < until) {
    for (let k = 0; k < 20; k++) fn();
    n += 20;
    now = process.hrtime.bigint();
  }
  return Number(now - start) / n;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const rows = [];
for (const c of CASES.filter((c) => !only || only.test(c.name))) {
  const init = fill(c.schema, 0, c.count);
  const codec = codecOf(c.schema);
  const message = create(c.schema, init);
  const bytes = toBinary(c.schema, message);
  // The same bytes both ways, and the same message back: the comparison is between equals.
  if (Buffer.compare(Buffer.from(codec.encode(init)), Buffer.from(bytes)) !== 0)
    throw new Error(`${c.name}: the two encoders disagree`);
  const sides = {
    "encode, hand-written": () => codec.encode(init),
    "encode, protobuf-es (create + toBinary)": () => toBinary(c.schema, create(c.schema, init)),
    "encode, protobuf-es (toBinary of a made message)": () => toBinary(c.schema, message),
    "decode, hand-written": () => codec.decode(bytes),
    "decode, protobuf-es (fromBinary)": () => fromBinary(c.schema, bytes),
  };
  const runs = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
  for (const fn of Object.values(sides)) time(fn, msPerRound / 3);
  for (let r = 0; r < rounds; r++)
    for (const [k, fn] of r % 2 ? Object.entries(sides).reverse() : Object.entries(sides))
      runs[k].push(time(fn, msPerRound));
  const ns = Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, median(v)]));
  rows.push({ name: c.name, kind: codec.kind, bytes: bytes.byteLength, ns });
  process.stderr.write(`[bench:codec] ${c.name} done\n`);
}

const fmt = (n) => (n >= 10_000 ? Math.round(n).toLocaleString("en") : n.toFixed(0));
console.log(
  `${new Date().toISOString().slice(0, 10)} · ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? "?"}) · ` +
    `node ${process.version} · load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")} at the end · ` +
    `${rounds} rounds × ${msPerRound} ms per codec and message, medians\n`,
);
console.log(
  "| message | bytes | encode hand-written ns/op | encode protobuf-es ns/op | protobuf-es / hand-written | toBinary alone ns/op | toBinary alone / hand-written | decode hand-written ns/op | decode protobuf-es ns/op | protobuf-es / hand-written |",
);
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const r of rows) {
  const [eh, ep, et, dh, dp] = Object.values(r.ns);
  console.log(
    `| ${r.name} | ${r.bytes} | ${fmt(eh)} | ${fmt(ep)} | ${(ep / eh).toFixed(2)} | ${fmt(et)} | ${(et / eh).toFixed(2)} | ` +
      `${fmt(dh)} | ${fmt(dp)} | ${(dp / dh).toFixed(2)} |`,
  );
}

const PAGES = [
  { name: "50 contacts", schema: contracts.ListContactsResponseSchema, count: 50 },
  { name: "50 deals", schema: contracts.ListOpportunitiesResponseSchema, count: 50 },
  { name: "50 tasks", schema: contracts.ListTasksResponseSchema, count: 50 },
  { name: "100 interactions", schema: contracts.ListInteractionsResponseSchema, count: 100 },
  { name: "50 learners", schema: contracts.ListLearnersResponseSchema, count: 50 },
  { name: "100 meetings", schema: contracts.ListAppointmentsResponseSchema, count: 100 },
  { name: "100 webhook attempts", schema: contracts.ListAttemptsResponseSchema, count: 100 },
];
const pageRows = [];
for (const c of PAGES.filter((c) => !only || only.test(c.name))) {
  const bytes = codecOf(c.schema).encode(fill(c.schema, 0, c.count));
  const codec = codecOf(c.schema);
  const short = apiJsonOfBinary(c.schema);
  const long = () => JSON.stringify(toApiJson(c.schema, codec.decode(bytes)));
  if (short(bytes).toString() !== long()) throw new Error(`${c.name}: the two ways disagree`);
  const sides = { long, short: () => short(bytes) };
  const runs = { long: [], short: [] };
  for (const fn of Object.values(sides)) time(fn, msPerRound / 3);
  for (let r = 0; r < rounds; r++)
    for (const [k, fn] of r % 2 ? Object.entries(sides).reverse() : Object.entries(sides))
      runs[k].push(time(fn, msPerRound));
  pageRows.push({
    ...c,
    bytes: bytes.byteLength,
    json: short(bytes).length,
    long: median(runs.long),
    short: median(runs.short),
  });
  process.stderr.write(`[bench:codec] page of ${c.name} done\n`);
}
console.log(
  "\n| list page, as the gateway answers it | reply bytes | JSON bytes | decode + toApiJson + JSON.stringify ns/op | from the bytes (apiJsonOfBinary) ns/op | from the bytes / the three steps |",
);
console.log("|---|---:|---:|---:|---:|---:|");
for (const r of pageRows)
  console.log(
    `| ${r.name} | ${r.bytes} | ${r.json} | ${fmt(r.long)} | ${fmt(r.short)} | ${(r.short / r.long).toFixed(2)} |`,
  );
