import { afterAll, describe, expect, it } from "vitest";
import { fingerprinter, loadDocument, type Operation, operations, poolOfParam, send } from "./harness.js";
import { populatedWorkspace } from "./populate.js";
import { type Json, minimalValue, type Pools, poolOf, resolve } from "./schema-arbitrary.js";

/*
 * Tenant isolation, generated from the OpenAPI document (docs/api/conventions.md §Authentication and API keys, §Errors): with workspace A's
 * key, every id of workspace B — in a path, a filter, a body reference or a cursor — answers exactly as an
 * id that never existed, and B is unchanged afterwards. A body field that names a resource (…Id, …UserId,
 * …Ids) with B's id is a 4xx that writes nothing in A either. A route that lands later is walked the
 * same way.
 */
const doc = await loadDocument();
const ops = operations(doc).filter((o) => !o.admin);
const fingerprint = await fingerprinter();
const a = await populatedWorkspace(ops);
const b = await populatedWorkspace(ops);
afterAll(() => fingerprint.close());

/** An id of the same shape as a real one that no workspace has. */
const never = (id: string) => id.replace(/[A-Za-z0-9]{6}$/, "zzzzzz");

/**
 * A calendar's free slots start at "now" unless told: read from a fixed instant instead (B's populated
 * meetings' day), so that the clock crossing a slot's start between the two snapshots is not taken for a
 * change. The other reads with a `from` filter list what exists, and keep it unset.
 */
const FIXED_FROM = "2031-01-01T00:00:00.000Z";
const startsAtNow = (o: Operation) => o.path.endsWith("/slots");

/** Everything B shows through its own reads, to compare before and after. */
async function snapshotOfB(): Promise<string> {
  const reads: unknown[] = [];
  for (const o of ops.filter((o) => o.method === "GET")) {
    const params = o.parameters.filter((p) => p.in === "path");
    if (params.length > 1) continue;
    const ids = params[0] ? poolOfParam(o.path, params[0].name, b.pools) : [undefined];
    const query: Array<[string, string]> = [["limit", "500"]];
    if (startsAtNow(o)) query.push(["from", FIXED_FROM]);
    for (const id of ids) {
      const path = o.path.replace(/\{[^}]+\}/, id ?? "");
      reads.push((await send({ method: "GET", path, query }, b.ws.key)).json);
    }
  }
  return JSON.stringify(reads);
}

/** A request of A's that is valid apart from the one value swapped in. */
function baseRequest(o: Operation, pools: Pools) {
  const body = o.body ? (minimalValue(o.body, doc, pools) as Record<string, unknown>) : undefined;
  const required = o.parameters.filter((p) => p.in !== "path" && p.required);
  return {
    body,
    required: required.map((p) => [p.name, String(minimalValue(p.schema, doc, pools, p.name))]),
  };
}

interface Probe {
  name: string;
  send(value: string): Promise<{ status: number; json?: Json }>;
  ids: string[];
  /** A body reference: B's id must be a 4xx that writes nothing, and A's own id must not be refused so. */
  own?: string;
}

/** A body field that names a resource: `contactId`, `assigneeUserId`, `assigneeUserIds`… */
const namesResource = (key: string) => /[a-z](Id|Ids)$/.test(key);

/**
 * Body fields named like a reference that name nothing the API holds: a contact's companyId is an id of
 * the client's own systems (there is no companies resource), kept as given.
 */
const NOT_REFERENCES = new Set(["companyId"]);

/** Every body field that names a resource but has no pool to probe it with (must stay empty). */
const unprobed = new Set<string>();

// Meetings booked by the probes each take a slot of their own, so a taken slot never hides a reference.
let slot = Date.parse("2032-01-01T00:00:00.000Z");
const withOwnSlot = (payload: unknown) => {
  if (!payload || typeof payload !== "object" || !("startAt" in payload)) return payload;
  slot += 30 * 60_000;
  return { ...payload, startAt: new Date(slot).toISOString() };
};

/** The smallest body A may send, with what the document cannot say (an upsert finds by phone or e-mail). */
let phones = 0;
const ownBody = (o: Operation, body: Record<string, unknown> | undefined) =>
  o.path === "/api/v1/contacts" && body
    ? { ...body, phone: `+55 51 9${String(Date.now()).slice(-5)}${String(++phones).padStart(3, "0")}` }
    : body;

/** Every place an operation takes an id: path parameters, query filters, body references. */
function probes(o: Operation): Probe[] {
  const { body, required } = baseRequest(o, a.pools);
  const call = (path: string, query: Array<[string, string]>, payload?: unknown) =>
    send(
      {
        method: o.method,
        path,
        query: [...required, ...query] as Array<[string, string]>,
        headers: payload === undefined ? {} : { "content-type": "application/json" },
        body: payload === undefined ? undefined : JSON.stringify(withOwnSlot(payload)),
      },
      a.ws.key,
    );
  const aPath = (skip: string) =>
    o.path.replace(/\{([^}]+)\}/g, (_, name) =>
      name === skip ? `{${name}}` : (poolOfParam(o.path, name, a.pools)[0] ?? "x"),
    );
  const list: Probe[] = [];
  for (const p of o.parameters) {
    const ids = p.in === "path" ? poolOfParam(o.path, p.name, b.pools) : (poolOf(p.name, b.pools) ?? []);
    if (!ids.length) continue;
    if (p.in === "path")
      list.push({
        name: `path ${p.name}`,
        ids,
        send: (v) => call(aPath(p.name).replace(`{${p.name}}`, v), [], body),
      });
    if (p.in === "query")
      list.push({ name: `query ${p.name}`, ids, send: (v) => call(aPath(""), [[p.name, v]], body) });
  }
  const schema = o.body ? resolve(o.body, doc) : undefined;
  for (const key of Object.keys(schema?.properties ?? {})) {
    if (!namesResource(key) || NOT_REFERENCES.has(key)) continue;
    const ids = poolOf(key, b.pools) ?? [];
    const own = poolOf(key, a.pools)?.[0];
    if (!ids.length || !own) {
      unprobed.add(`${o.method} ${o.path} body.${key}`);
      continue;
    }
    const asSent = (v: string) => (key.endsWith("Ids") ? [v] : v);
    list.push({
      name: `body ${key}`,
      ids,
      own,
      send: (v) => call(aPath(""), [], { ...ownBody(o, body), [key]: asSent(v) }),
    });
  }
  const cursors = b.pools[`cursor ${o.path}`];
  if (cursors?.length)
    list.push({ name: "query cursor", ids: cursors, send: (v) => call(aPath(""), [["cursor", v]]) });
  return list;
}

const probed = ops.filter((o) => probes(o).length > 0);

describe.each(probed.map((o) => [`${o.method} ${o.path}`, o] as const))("generated isolation: %s", (_, o) => {
  const list = probes(o);
  it("docs/api/conventions.md §Authentication and API keys, §Errors: another workspace's ids answer as ids that never existed, and leave it unchanged", async () => {
    const before = { rows: await fingerprint.of(b.ws.id), reads: await snapshotOfB() };
    const rowsOfA = await fingerprint.of(a.ws.id);
    const refused: Array<[Probe, { status: number; json?: Json }]> = [];
    for (const probe of list) {
      for (const id of probe.ids) {
        const theirs = await probe.send(id);
        const missing = await probe.send(
          probe.name === "query cursor" ? `${id.slice(0, -4)}AAAA` : never(id),
        );
        const what = `${probe.name}=${id}: ${JSON.stringify(theirs.json)?.slice(0, 300)}`;
        expect(theirs.status, what).toBe(missing.status);
        expect(theirs.json?.error?.code, what).toBe(missing.json?.error?.code);
        if (theirs.status === 200 && Array.isArray(theirs.json?.data))
          expect(theirs.json.data, what).toEqual(missing.json?.data);
        // docs/api/conventions.md §Identifiers: a body reference to B is refused, never kept in A.
        if (probe.own) {
          expect(theirs.status, what).toBeGreaterThanOrEqual(400);
          expect(theirs.status, what).toBeLessThan(500);
          refused.push([probe, theirs]);
        }
      }
    }
    expect(await fingerprint.of(b.ws.id)).toBe(before.rows);
    expect(await snapshotOfB()).toBe(before.reads);
    expect(await fingerprint.of(a.ws.id), "a body naming B's ids wrote to A").toBe(rowsOfA);
    // The same request with A's own id is not refused the same way: what B's id met was the reference check.
    for (const [probe, theirs] of refused) {
      const mine = await probe.send(probe.own!);
      const what = `${probe.name}=${probe.own}: ${JSON.stringify(mine.json)?.slice(0, 300)}`;
      expect([mine.status, mine.json?.error?.code], what).not.toEqual([
        theirs.status,
        theirs.json?.error?.code,
      ]);
    }
  });
});

it("docs/api/conventions.md §Identifiers: every body field that names a resource is probed with B's ids (none left without a pool)", () => {
  expect([...unprobed]).toEqual([]);
  const names = probed.flatMap((o) =>
    probes(o)
      .filter((p) => p.own)
      .map((p) => `${o.method} ${o.path} ${p.name}`),
  );
  for (const field of [
    "POST /api/v1/contacts body ownerUserId",
    "PATCH /api/v1/contacts/{id} body ownerUserId",
    "POST /api/v1/opportunities body stageId",
    "POST /api/v1/tasks body assigneeUserId",
    "POST /api/v1/notes body userId",
    "POST /api/v1/appointments body calendarId",
    "POST /api/v1/appointments body opportunityId",
  ])
    expect(names).toContain(field);
});

it("docs/api/conventions.md §Authentication and API keys: every operation that takes an id is probed (the generator found them)", () => {
  const names = probed.map((o) => `${o.method} ${o.path}`);
  for (const route of [
    "GET /api/v1/contacts/{id}",
    "PATCH /api/v1/opportunities/{id}",
    "GET /api/v1/tasks",
    "POST /api/v1/notes",
    "POST /api/v1/webhooks/{id}/deliveries/{deliveryId}/resend",
    "POST /api/v1/webhooks/{id}/recover",
    "GET /api/v1/webhooks/{id}/attempts",
    "GET /api/v1/events",
  ])
    expect(names).toContain(route);
});
