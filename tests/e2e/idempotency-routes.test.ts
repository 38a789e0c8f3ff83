import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { newWorkspace, type Workspace } from "../helpers.js";
import { contact, member } from "./crm-fixtures.js";
import { ahead, book, calendar } from "./scheduling-fixtures.js";

/**
 * docs/api/conventions.md §Idempotency-Key on every POST that creates or
 * changes something, beside POST /opportunities (idempotency.test.ts): the
 * same rules, route by route, through the gateway.
 */

let ws: Workspace;
let cal: Awaited<ReturnType<typeof calendar>>;
let user: { id: string };
let n = 0;
const newKey = () => `routes-${Date.now()}-${++n}`;

interface Case {
  /** The status of a first request that did its work. */
  status: number;
  path: string;
  body?: unknown;
  /** The same key with another path or body. */
  other: { path?: string; body?: unknown };
  /** Checks that the work was done once, after the repeats. */
  once?: (first: { body: { id?: string } }) => Promise<void>;
}

/** A meeting of its own, each on a time of its own. */
async function meeting() {
  const ct = await contact(ws);
  const res = await book(ws, {
    calendarId: cal.id,
    contactId: ct.id,
    assigneeUserId: cal.assigneeUserIds[0],
    startAt: ahead(1 + (++n % 300), "09:00"),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string };
}

const routes: Record<string, () => Promise<Case>> = {
  "POST /contacts": async () => {
    const email = `idem-${newKey()}@example.com`;
    return {
      status: 201,
      path: "/contacts",
      body: { name: "Ana", email },
      other: { body: { name: "Bia", email } },
    };
  },
  "POST /contacts/:id/archive": async () => {
    const ct = await contact(ws);
    const other = await contact(ws);
    return {
      status: 200,
      path: `/contacts/${ct.id}/archive`,
      other: { path: `/contacts/${other.id}/archive` },
    };
  },
  "POST /contacts/:id/unarchive": async () => {
    const ct = await contact(ws);
    expect((await ws.call("POST", `/contacts/${ct.id}/archive`)).status).toBe(200);
    return {
      status: 200,
      path: `/contacts/${ct.id}/unarchive`,
      other: { path: `/contacts/${ct.id}/archive` },
    };
  },
  "POST /contacts/:id/erase": async () => {
    const ct = await contact(ws);
    const other = await contact(ws);
    return {
      status: 200,
      path: `/contacts/${ct.id}/erase`,
      other: { path: `/contacts/${other.id}/erase` },
      once: async () => {
        expect((await ws.call("GET", `/contacts/${ct.id}`)).status).toBe(404);
      },
    };
  },
  "POST /tasks": async () => {
    const assignee = await member(ws);
    return {
      status: 201,
      path: "/tasks",
      body: { title: "Call back", assigneeUserId: assignee.id },
      other: { body: { title: "Call later", assigneeUserId: assignee.id } },
      once: async () => {
        const list = await ws.call("GET", `/tasks?assigneeUserId=${assignee.id}`);
        expect(list.body.data).toHaveLength(1);
      },
    };
  },
  "POST /notes": async () => {
    const ct = await contact(ws);
    return {
      status: 201,
      path: "/notes",
      body: { contactId: ct.id, body: "Asked for a quote", userId: user.id },
      other: { body: { contactId: ct.id, body: "Asked for a demo", userId: user.id } },
    };
  },
  "POST /webhooks": async () => {
    const url = `http://127.0.0.1:9/idem/${newKey()}`;
    return {
      status: 201,
      path: "/webhooks",
      body: { url, events: ["contact.created"] },
      other: { body: { url, events: ["contact.updated"] } },
      once: async () => {
        const list = await ws.call("GET", "/webhooks");
        expect(list.body.data.filter((s: { url: string }) => s.url === url)).toHaveLength(1);
      },
    };
  },
  "POST /appointments/:id/cancel": async () => {
    const m = await meeting();
    return {
      status: 200,
      path: `/appointments/${m.id}/cancel`,
      body: { reason: "asked to" },
      other: { body: { reason: "no answer" } },
    };
  },
  "POST /appointments/:id/reschedule": async () => {
    const m = await meeting();
    return {
      status: 200,
      path: `/appointments/${m.id}/reschedule`,
      body: { startAt: ahead(1 + (++n % 300), "15:00") },
      other: { body: { startAt: ahead(1 + (++n % 300), "16:00") } },
    };
  },
  "POST /appointments/:id/outcome": async () => {
    const m = await meeting();
    return {
      status: 200,
      path: `/appointments/${m.id}/outcome`,
      body: { outcome: "realizada" },
      other: { body: { outcome: "noshow" } },
    };
  },
};

/** The service database that owns a route's writes, for holding a key as if a request were in flight. */
const owner = (name: string) =>
  name.includes("appointments") ? "scheduling" : name.includes("webhooks") ? "webhooks" : "crm";
const databases = new Map<string, postgres.Sql>();
function database(service: string) {
  let sql = databases.get(service);
  if (!sql) {
    const url = new URL(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
    url.pathname = `/funil_${inject("funilEnv")}_${service}`;
    sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
    databases.set(service, sql);
  }
  return sql;
}

const post = (c: { path: string; body?: unknown }, key: string) =>
  ws.call("POST", c.path, c.body, { "idempotency-key": key });

beforeAll(async () => {
  ws = await newWorkspace();
  [cal, user] = await Promise.all([calendar(ws), member(ws)]);
});

afterAll(async () => {
  await Promise.all([...databases.values()].map((sql) => sql.end()));
});

describe.each(Object.keys(routes))(
  "Idempotency-Key on %s (docs/api/conventions.md §Idempotency-Key)",
  (name) => {
    it("a repeat replays the first answer with idempotent-replayed: true, and the work is done once", async () => {
      const c = await routes[name]!();
      const key = newKey();
      const first = await post(c, key);
      expect(first.status, JSON.stringify(first.body)).toBe(c.status);
      expect(first.headers.get("idempotent-replayed")).toBeNull();
      const again = await post(c, key);
      expect(again.status).toBe(c.status);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.body).toEqual(first.body);
      await c.once?.(first);
    });

    it("a repeat while the first is in flight is 409 idempotency_key_in_use, and is not remembered", async () => {
      const c = await routes[name]!();
      const key = newKey();
      // The key is held the way a request in flight holds it: its transaction's lock on the key.
      const held = await database(owner(name)).reserve();
      try {
        await held`select pg_advisory_lock(hashtextextended(${`idem:${ws.id}:${key}`}, 0))`;
        const busy = await post(c, key);
        expect(busy.status).toBe(409);
        expect(busy.body.error.code).toBe("idempotency_key_in_use");
      } finally {
        await held`select pg_advisory_unlock_all()`;
        held.release();
      }
      const done = await post(c, key);
      expect(done.status, JSON.stringify(done.body)).toBe(c.status);
      expect(done.headers.get("idempotent-replayed")).toBeNull();
    });

    it("the same key with another path or body is 422 idempotency_key_reused", async () => {
      const c = await routes[name]!();
      const key = newKey();
      expect((await post(c, key)).status).toBe(c.status);
      const reused = await post({ path: c.other.path ?? c.path, body: c.other.body ?? c.body }, key);
      expect(reused.status).toBe(422);
      expect(reused.body.error.code).toBe("idempotency_key_reused");
    });
  },
);

describe("Idempotency-Key replays what the first request answered, not the state since", () => {
  it("an outcome replayed after another was recorded answers the first outcome", async () => {
    const m = await meeting();
    const key = newKey();
    const first = await post({ path: `/appointments/${m.id}/outcome`, body: { outcome: "realizada" } }, key);
    expect(first.body.outcome).toBe("realizada");
    const later = await ws.call("POST", `/appointments/${m.id}/outcome`, { outcome: "noshow" });
    expect(later.body.outcome).toBe("noshow");
    const again = await post({ path: `/appointments/${m.id}/outcome`, body: { outcome: "realizada" } }, key);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
  });

  it("a webhook created under a key shows the same secret on replay, remembered as the subscription keeps it", async () => {
    const body = { url: `http://127.0.0.1:9/idem/${newKey()}`, events: ["contact.created"] };
    const key = newKey();
    const first = await post({ path: "/webhooks", body }, key);
    const again = await post({ path: "/webhooks", body }, key);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.secret).toBe(first.body.secret);
    expect(again.body.subscription.id).toBe(first.body.subscription.id);
    // Sealed under WEBHOOK_SECRET_KEY when it is set: the key's row is never plainer than the subscription.
    const [row] = await database("webhooks")<{ remembered: string; kept: string }[]>`
      select k.response_body->'ok'->>'secret' as remembered, s.secret as kept
      from idempotency_keys k, subscriptions s
      where k.workspace_id = ${ws.id} and k.key = ${key} and s.id = ${first.body.subscription.id}`;
    expect(row?.remembered).toBe(row?.kept);
  });

  it("a malformed key is a 400 on every route, before anything is done", async () => {
    const c = await routes["POST /tasks"]!();
    const res = await ws.call("POST", c.path, c.body, { "idempotency-key": "has space" });
    expect(res.status).toBe(400);
    expect(res.body.error.details[0].path).toBe("headers.idempotency-key");
  });
});
