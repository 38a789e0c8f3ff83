// Fills the bench workspace through the public API, so the rows are exactly what the API writes (search
// text, folded keys, events); 16 clients at once. Then VACUUM ANALYZE, as autovacuum would have done.
import postgres from "postgres";

/** An HTTP client of the gateway that throws on any non-2xx answer. */
export function apiClient(base, adminToken) {
  return async function call(method, path, body, key) {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key ?? adminToken}`,
        ...(body ? { "content-type": "application/json" } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res.status === 204 ? null : res.json();
  };
}

/** Runs `count` calls of `one(i)` with 16 clients; returns the seconds it took. */
export async function parallel(count, one, progress) {
  const started = Date.now();
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < count) {
        await one(next++);
        if (++done % 2000 === 0) progress(`${done}/${count}`);
      }
    }),
  );
  return (Date.now() - started) / 1000;
}

/**
 * A workspace with `contacts` contacts and `deals` deals (a quarter of them closed), and a key with the
 * read and write scopes of both. Returns what the scenarios need.
 */
export async function fill({ call, contacts, deals, crmDatabaseUrl, progress }) {
  const ws = await call("POST", "/admin/v1/workspaces", { name: "bench" });
  const { secret: key } = await call("POST", `/admin/v1/workspaces/${ws.id}/keys`, {
    name: "bench",
    scopes: ["contacts.read", "contacts.write", "members.read", "opportunities.read", "opportunities.write"],
  });
  const contactIds = [];
  const contactSeconds = await parallel(
    contacts,
    async (i) => {
      const c = await call(
        "POST",
        "/api/v1/contacts",
        {
          name: `Contact ${i} São`,
          phone: `+55 11 9${String(i).padStart(8, "0")}`,
          email: `c${i}@bench.io`,
          tags: [i % 10 === 0 ? "vip" : "std"],
        },
        key,
      );
      contactIds[i] = c.id;
    },
    (n) => progress(`contacts ${n}`),
  );
  const pipeline = await call("POST", `/admin/v1/workspaces/${ws.id}/pipelines`, {
    name: "Bench",
    stages: [{ name: "A" }, { name: "B" }, { name: "C" }, { name: "D" }],
  });
  const dealSeconds = await parallel(
    deals,
    async (i) => {
      const deal = await call(
        "POST",
        "/api/v1/opportunities",
        {
          contactId: contactIds[i % contacts],
          pipelineId: pipeline.id,
          stageId: pipeline.stages[i % 4].id,
          title: `Deal ${i}`,
          valueCents: 1000 * (i % 97),
          utmSource: i % 2 ? "google" : "youtube",
        },
        key,
      );
      if (i % 4 === 3)
        await call(
          "PATCH",
          `/api/v1/opportunities/${deal.id}`,
          { status: i % 8 === 3 ? "won" : "lost" },
          key,
        );
    },
    (n) => progress(`deals ${n}`),
  );
  // Fresh statistics and visibility maps, as autovacuum would have them by now. Some servers run with
  // autovacuum=off (the development machine's does): there, plans after a bulk load are guesses.
  const db = postgres(crmDatabaseUrl, { max: 1, onnotice: () => {} });
  const [{ autovacuum }] = await db`select current_setting('autovacuum') as autovacuum`;
  await db`vacuum analyze`;
  await db.end();
  return {
    workspaceId: ws.id,
    key,
    pipeline,
    autovacuum,
    contactsPerSecond: Math.round(contacts / contactSeconds),
    dealsPerSecond: Math.round(deals / dealSeconds),
  };
}
