import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventsSubscriber, newWorkspace, type Workspace } from "../helpers.js";

let ws: Workspace;
let other: Workspace;
let events: Awaited<ReturnType<typeof eventsSubscriber>>;

beforeAll(async () => {
  [ws, other, events] = await Promise.all([newWorkspace(), newWorkspace(), eventsSubscriber()]);
  for (const [entity, fieldKey, type, options] of [
    ["contact", "plan", "select", ["free", "pro"]],
    ["contact", "seats", "number", undefined],
    ["contact", "vip", "boolean", undefined],
    ["contact", "birthday", "date", undefined],
    ["contact", "nickname", "text", undefined],
  ] as const) {
    const res = await ws.admin("POST", `/workspaces/${ws.id}/custom-fields`, {
      entity,
      fieldKey,
      label: fieldKey,
      type,
      ...(options ? { options } : {}),
    });
    expect(res.status).toBe(201);
  }
});
afterAll(async () => {
  await events.close();
});

let seq = 0;
const uniquePhone = () => `+55 11 9${String(Date.now()).slice(-6)}${String(++seq).padStart(2, "0")}`;

describe("POST /contacts (upsert)", () => {
  it("docs/api/contacts.md §POST /contacts (create or update: upsert): not found → created (201), status active, every field present", async () => {
    const res = await ws.call("POST", "/contacts", {
      name: "Maria",
      phone: uniquePhone(),
      email: `maria${seq}@example.com`,
      tags: ["lead"],
      utm: { source: "google" },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: "Maria", status: "active", tags: ["lead"], customFields: {} });
    expect(res.body.utm).toEqual({
      source: "google",
      medium: null,
      campaign: null,
      term: null,
      content: null,
    });
    expect(res.body.id).toMatch(/^ct_/);
    expect(res.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(res.body).not.toHaveProperty("firstHumanTouchAt");
  });

  it("docs/api/contacts.md §POST /contacts (create or update: upsert): looked up by phone first (digits only), then e-mail", async () => {
    const phone = uniquePhone();
    const a = await ws.call("POST", "/contacts", { name: "By phone", phone });
    const b = await ws.call("POST", "/contacts", { name: "By mail", email: `bymail${seq}@example.com` });
    const samePhone = await ws.call("POST", "/contacts", { phone: phone.replace(/\D/g, "") });
    expect(samePhone.status).toBe(200);
    expect(samePhone.body.id).toBe(a.body.id);
    const sameMail = await ws.call("POST", "/contacts", {
      email: b.body.email.toUpperCase(),
      company: "Acme",
    });
    expect(sameMail.status).toBe(200);
    expect(sameMail.body.id).toBe(b.body.id);
    expect(sameMail.body.company).toBe("Acme");
  });

  it("docs/api/contacts.md §POST /contacts (create or update: upsert): name only fills an empty name; tags are added, never removed; nothing is erased", async () => {
    const phone = uniquePhone();
    const first = await ws.call("POST", "/contacts", {
      phone,
      tags: ["a", "b"],
      company: "Old Co",
      customFields: { plan: "free" },
    });
    const named = await ws.call("POST", "/contacts", { phone, name: "First name" });
    expect(named.body.name).toBe("First name");
    const again = await ws.call("POST", "/contacts", {
      phone,
      name: "Second name",
      tags: ["b", "c"],
      company: "",
      notes: null,
      customFields: { seats: 3 },
    });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    expect(again.body.name).toBe("First name");
    expect(again.body.tags).toEqual(["a", "b", "c"]);
    expect(again.body.company).toBe("Old Co");
    expect(again.body.customFields).toEqual({ plan: "free", seats: 3 });
  });

  it("docs/api/contacts.md §POST /contacts (create or update: upsert): phone finds A and the e-mail belongs to B → A is updated, the e-mail is left out", async () => {
    const a = await ws.call("POST", "/contacts", { name: "A", phone: uniquePhone() });
    const b = await ws.call("POST", "/contacts", { name: "B", email: `b${seq}@example.com` });
    const res = await ws.call("POST", "/contacts", { phone: a.body.phone, email: b.body.email, role: "CTO" });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(a.body.id);
    expect(res.body.email).toBeNull();
    expect(res.body.role).toBe("CTO");
    const bAfter = await ws.call("GET", `/contacts/${b.body.id}`);
    expect(bAfter.body.email).toBe(b.body.email);
  });

  it("docs/api/contacts.md §POST /contacts (create or update: upsert): archived contacts are found, and their status is not changed", async () => {
    const phone = uniquePhone();
    const c = await ws.call("POST", "/contacts", { phone });
    await ws.call("POST", `/contacts/${c.body.id}/archive`);
    const res = await ws.call("POST", "/contacts", { phone, name: "Back?" });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(c.body.id);
    expect(res.body.status).toBe("archived");
  });

  it("docs/api/contacts.md §POST /contacts (create or update: upsert): two concurrent upserts with the same phone make exactly one contact", async () => {
    const phone = uniquePhone();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => ws.call("POST", "/contacts", { phone, tags: [`t${i}`] })),
    );
    const ids = new Set(results.map((r) => r.body.id));
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    expect(ids.size).toBe(1);
    const list = await ws.call("GET", `/contacts?phone=${encodeURIComponent(phone)}`);
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0].tags.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `t${i}`).sort());
  });

  it("docs/api/contacts.md §POST /contacts (create or update: upsert): needs phone or email; status, id or timestamps in the body → 400", async () => {
    const none = await ws.call("POST", "/contacts", { name: "Nobody" });
    expect(none.status).toBe(400);
    expect(none.body.error.code).toBe("validation_failed");
    for (const field of ["status", "id", "createdAt", "updatedAt"]) {
      const res = await ws.call("POST", "/contacts", { phone: uniquePhone(), [field]: "x" });
      expect(res.status).toBe(400);
      expect(res.body.error.details).toContainEqual({ path: `body.${field}`, message: "unknown field" });
    }
  });

  it("docs/api/contacts.md §POST /contacts (create or update: upsert): contact.created on creation; contact.updated only when an upsert changed something", async () => {
    const phone = uniquePhone();
    const created = await ws.call("POST", "/contacts", { phone, name: "Evented" });
    const evt = await events.next("contact.created", (e) => e.data.id === created.body.id);
    expect(evt).toMatchObject({ type: "contact.created", workspaceId: ws.id, data: created.body });
    expect(evt.id).toMatch(/^evt_/);
    expect(Date.parse(evt.occurredAt)).not.toBeNaN();
    await ws.call("POST", "/contacts", { phone, name: "Ignored, name is set" });
    const changed = await ws.call("POST", "/contacts", { phone, tags: ["new"] });
    const upd = await events.next("contact.updated", (e) => e.data.id === created.body.id);
    expect(upd.data.tags).toEqual(["new"]);
    expect(upd.data.updatedAt).toBe(changed.body.updatedAt);
    // The no-op upsert in between emitted nothing.
    expect(events.all("contact.updated").filter((e) => e.data.id === created.body.id)).toHaveLength(0);
  });
});

describe("PATCH /contacts/{id}", () => {
  it("docs/api/contacts.md §PATCH /contacts/{id}: absent = untouched, explicit null = cleared, tags replaced as sent", async () => {
    const c = await ws.call("POST", "/contacts", {
      name: "Pat",
      phone: uniquePhone(),
      company: "Co",
      notes: "n",
      tags: ["x", "y"],
      utm: { source: "s", medium: "m" },
    });
    const res = await ws.call("PATCH", `/contacts/${c.body.id}`, {
      company: null,
      tags: ["z"],
      utm: { medium: null },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: "Pat", company: null, notes: "n", tags: ["z"] });
    expect(res.body.utm).toMatchObject({ source: "s", medium: null });
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(c.body.updatedAt));
  });

  it("docs/api/contacts.md §PATCH /contacts/{id}: customFields merged key by key, a null value removes the key", async () => {
    const c = await ws.call("POST", "/contacts", {
      phone: uniquePhone(),
      customFields: { plan: "pro", seats: 2 },
    });
    const res = await ws.call("PATCH", `/contacts/${c.body.id}`, {
      customFields: { seats: null, vip: true, birthday: "1990-05-01" },
    });
    expect(res.status).toBe(200);
    expect(res.body.customFields).toEqual({ plan: "pro", vip: true, birthday: "1990-05-01" });
  });

  it("docs/api/contacts.md §PATCH /contacts/{id}: unknown customFields key or wrong type → 400 naming it", async () => {
    const c = await ws.call("POST", "/contacts", { phone: uniquePhone() });
    const unknown = await ws.call("PATCH", `/contacts/${c.body.id}`, { customFields: { nope: 1 } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details[0].path).toBe("body.customFields.nope");
    for (const [key, value] of [
      ["seats", "three"],
      ["vip", "yes"],
      ["plan", "enterprise"],
      ["birthday", "not a date"],
      ["nickname", 42],
    ] as const) {
      const res = await ws.call("PATCH", `/contacts/${c.body.id}`, { customFields: { [key]: value } });
      expect(res.status, key).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
      expect(res.body.error.details[0].path).toBe(`body.customFields.${key}`);
    }
    // Upsert validates the same way, and a definition of the other entity does not count.
    const viaUpsert = await ws.call("POST", "/contacts", {
      phone: uniquePhone(),
      customFields: { seats: "x" },
    });
    expect(viaUpsert.status).toBe(400);
  });

  it("docs/api/conventions.md §Errors (409 contact_conflict): a PATCH giving a contact another contact's phone or e-mail → 409", async () => {
    const a = await ws.call("POST", "/contacts", { phone: uniquePhone(), email: `ca${seq}@example.com` });
    const b = await ws.call("POST", "/contacts", { phone: uniquePhone() });
    const phone = await ws.call("PATCH", `/contacts/${b.body.id}`, {
      phone: a.body.phone.replace(/\D/g, ""),
    });
    expect(phone.status).toBe(409);
    expect(phone.body.error.code).toBe("contact_conflict");
    const email = await ws.call("PATCH", `/contacts/${b.body.id}`, { email: a.body.email.toUpperCase() });
    expect(email.status).toBe(409);
    expect(email.body.error.code).toBe("contact_conflict");
  });

  it("docs/api/conventions.md §Errors: bad input is a 400 with a stable code, never a 500", async () => {
    const c = await ws.call("POST", "/contacts", { phone: uniquePhone() });
    const cases: unknown[] = [
      { name: 42 },
      { tags: "a" },
      { tags: [""] },
      { name: "x".repeat(201) },
      { notes: "x".repeat(10_001) },
      { utm: { source: 1 } },
      { utm: { other: "x" } },
      { customFields: [] },
      { email: "not-an-email" },
      { phone: "abc" },
      "not json",
      [],
    ];
    for (const body of cases) {
      const res = await ws.call("PATCH", `/contacts/${c.body.id}`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
    }
    const unicode = await ws.call("PATCH", `/contacts/${c.body.id}`, { name: "Zoë 李 🚀", notes: "\u0000x" });
    expect(unicode.status).toBe(400);
    const ok = await ws.call("PATCH", `/contacts/${c.body.id}`, { name: "Zoë 李 🚀" });
    expect(ok.body.name).toBe("Zoë 李 🚀");
  });
});

describe("archive and unarchive", () => {
  it("docs/api/contacts.md §Archive and unarchive: archive is soft and reversible (200, idempotent); archived contacts leave the default list", async () => {
    const c = await ws.call("POST", "/contacts", { phone: uniquePhone(), tags: ["arch"] });
    const a1 = await ws.call("POST", `/contacts/${c.body.id}/archive`);
    const a2 = await ws.call("POST", `/contacts/${c.body.id}/archive`);
    expect([a1.status, a2.status]).toEqual([200, 200]);
    expect(a2.body.status).toBe("archived");
    expect(a2.body.updatedAt).toBe(a1.body.updatedAt);
    const active = await ws.call("GET", "/contacts?tag=arch");
    expect(active.body.data.map((x: { id: string }) => x.id)).not.toContain(c.body.id);
    const archived = await ws.call("GET", "/contacts?tag=arch&status=archived");
    expect(archived.body.data.map((x: { id: string }) => x.id)).toContain(c.body.id);
    const back = await ws.call("POST", `/contacts/${c.body.id}/unarchive`);
    expect(back.body.status).toBe("active");
    const evt = await events.next(
      "contact.updated",
      (e) => e.data.id === c.body.id && e.data.status === "archived",
    );
    expect(evt.workspaceId).toBe(ws.id);
  });
});

describe("GET /contacts and GET /contacts/{id}", () => {
  let lw: Workspace;
  const made: Array<{ id: string; createdAt: string }> = [];
  beforeAll(async () => {
    lw = await newWorkspace();
    for (let i = 0; i < 7; i++) {
      const res = await lw.call("POST", "/contacts", {
        name: i === 3 ? "José Álvares" : `Person ${i}`,
        phone: `+1 (555) 000-00${String(i).padStart(2, "0")}`,
        email: `p${i}@Example.com`,
        company: i % 2 ? "Odd Inc" : "Even LLC",
        tags: i % 2 ? ["odd"] : ["even"],
      });
      made.push(res.body);
    }
  });

  it("docs/api/conventions.md §Lists and pagination: walking every page returns each item exactly once, in (createdAt, id) order", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await lw.call("GET", `/contacts?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((c: { id: string }) => c.id));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(4);
    expect(seen).toEqual(made.map((m) => m.id));
  });

  it("docs/api/conventions.md §Limits: limit is 1..500; 0, 501, -1, abc, 1.5 → 400 validation_failed", async () => {
    for (const limit of ["0", "501", "-1", "abc", "1.5", ""]) {
      const res = await lw.call("GET", `/contacts?limit=${limit}`);
      expect(res.status, limit).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
    }
    expect((await lw.call("GET", "/contacts?limit=500")).status).toBe(200);
  });

  it("docs/api/conventions.md §Limits: the default limit of contacts is 50", async () => {
    const big = await newWorkspace();
    await Promise.all(
      Array.from({ length: 52 }, (_, i) => big.call("POST", "/contacts", { email: `d${i}@x.io` })),
    );
    const res = await big.call("GET", "/contacts");
    expect(res.body.data).toHaveLength(50);
    expect(res.body.nextCursor).not.toBeNull();
  });

  it("docs/api/conventions.md §Lists and pagination (400 invalid_cursor): forged cursors and cursors reused with other filters → 400", async () => {
    const page = await lw.call("GET", "/contacts?limit=2");
    const forged = [
      "abc",
      "!!!",
      Buffer.from('{"l":"contacts","f":"x","p":[1,2]}').toString("base64url"),
      Buffer.from("not json").toString("base64url"),
      "a".repeat(2000),
    ];
    for (const cursor of forged) {
      const res = await lw.call("GET", `/contacts?cursor=${encodeURIComponent(cursor)}`);
      expect(res.status, cursor).toBe(400);
      expect(res.body.error.code).toBe("invalid_cursor");
    }
    const otherFilters = await lw.call("GET", `/contacts?tag=odd&cursor=${page.body.nextCursor}`);
    expect(otherFilters.status).toBe(400);
    expect(otherFilters.body.error.code).toBe("invalid_cursor");
    // A change of limit is not a change of filters.
    expect((await lw.call("GET", `/contacts?limit=3&cursor=${page.body.nextCursor}`)).status).toBe(200);
  });

  it("docs/api/contacts.md §GET /contacts: query contains, case- and accent-insensitive, over name, e-mail, phone and company", async () => {
    const byName = await lw.call("GET", "/contacts?query=jose%20alvares");
    expect(byName.body.data.map((c: { name: string }) => c.name)).toEqual(["José Álvares"]);
    const byCompany = await lw.call("GET", "/contacts?query=ODD%20inc");
    expect(byCompany.body.data).toHaveLength(3);
    const byMail = await lw.call("GET", "/contacts?query=p4%40example");
    expect(byMail.body.data).toHaveLength(1);
    const like = await lw.call("GET", "/contacts?query=%25");
    expect(like.body.data).toHaveLength(0);
  });

  it("docs/api/contacts.md §GET /contacts: email is exact and case-insensitive; phone is exact after reducing both sides to digits", async () => {
    const mail = await lw.call("GET", "/contacts?email=P2%40EXAMPLE.COM");
    expect(mail.body.data.map((c: { id: string }) => c.id)).toEqual([made[2]!.id]);
    expect((await lw.call("GET", "/contacts?email=p2%40example")).body.data).toHaveLength(0);
    const phone = await lw.call("GET", `/contacts?phone=${encodeURIComponent("1-555-000-0005")}`);
    expect(phone.body.data.map((c: { id: string }) => c.id)).toEqual([made[5]!.id]);
    expect((await lw.call("GET", "/contacts?phone=5550000005")).body.data).toHaveLength(0);
  });

  it("docs/api/conventions.md §Limits: tag filter, and the length rules of query, email, phone and tag", async () => {
    const odd = await lw.call("GET", "/contacts?tag=odd");
    expect(odd.body.data).toHaveLength(3);
    for (const q of [
      "query=",
      `query=${"x".repeat(201)}`,
      "email=ab",
      "phone=12",
      `phone=${"1".repeat(41)}`,
      "tag=",
      `tag=${"t".repeat(61)}`,
      "status=deleted",
      "createdAfter=0000-01-01T00:00:00Z",
      "updatedAfter=2026-02-30T00:00:00Z",
      "createdAfter=2026-01-01",
      "createdAfter=yesterday",
    ]) {
      const res = await lw.call("GET", `/contacts?${q}`);
      expect(res.status, q).toBe(400);
    }
  });

  it("docs/api/conventions.md §Lists and pagination: createdAfter and updatedAfter are strict; updatedAfter orders by updatedAt", async () => {
    const after = await lw.call("GET", `/contacts?createdAfter=${encodeURIComponent(made[4]!.createdAt)}`);
    expect(after.body.data.map((c: { id: string }) => c.id)).toEqual(
      made.filter((m) => m.createdAt > made[4]!.createdAt).map((m) => m.id),
    );
    const touched = await lw.call("PATCH", `/contacts/${made[0]!.id}`, { notes: "touched" });
    const polled = await lw.call("GET", `/contacts?updatedAfter=${encodeURIComponent(made[6]!.createdAt)}`);
    expect(polled.body.data.map((c: { id: string }) => c.id)).toContain(made[0]!.id);
    const same = await lw.call("GET", `/contacts?updatedAfter=${encodeURIComponent(touched.body.updatedAt)}`);
    expect(same.body.data.map((c: { id: string }) => c.id)).not.toContain(made[0]!.id);
  });

  it("docs/api/contacts.md §GET /contacts/{id}: the single read has firstHumanTouchAt and lastHumanTouchAt (null until the timeline exists); the list never does", async () => {
    const one = await lw.call("GET", `/contacts/${made[1]!.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: made[1]!.id, firstHumanTouchAt: null, lastHumanTouchAt: null });
    const list = await lw.call("GET", "/contacts?limit=1");
    expect(list.body.data[0]).not.toHaveProperty("firstHumanTouchAt");
    expect(list.body.data[0]).not.toHaveProperty("lastHumanTouchAt");
  });
});

describe("workspace isolation", () => {
  it("docs/api/conventions.md §Errors: another workspace's contact is 404 everywhere and never listed", async () => {
    const mine = await ws.call("POST", "/contacts", { phone: uniquePhone(), name: "Secret" });
    for (const [method, path, body] of [
      ["GET", `/contacts/${mine.body.id}`],
      ["PATCH", `/contacts/${mine.body.id}`, { name: "Hacked" }],
      ["POST", `/contacts/${mine.body.id}/archive`],
      ["POST", `/contacts/${mine.body.id}/unarchive`],
    ] as const) {
      const res = await other.call(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe("not_found");
    }
    const list = await other.call("GET", `/contacts?query=secret`);
    expect(list.body.data).toHaveLength(0);
    // The same phone in another workspace is another contact.
    const theirs = await other.call("POST", "/contacts", { phone: mine.body.phone });
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect((await ws.call("GET", `/contacts/${mine.body.id}`)).body.name).toBe("Secret");
  });
});
