import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyFor, newWorkspace, type Workspace, waitFor } from "../helpers.js";
import { type Receiver, signedWith, startReceiver } from "../receiver.js";

// The test stack runs the schedule in milliseconds (tests/setup/stack.ts): retries after 200, 400, 600,
// 800 and 1000 ms, the breaker after 6 s of failing, a 1.5 s timeout.
const SCHEDULE = [200, 400, 600, 800, 1000];

let ws: Workspace;
let rx: Receiver;
let seq = 0;
const path = (name: string) => `/${name}-${Date.now().toString(36)}-${++seq}`;
const phone = () => `+55 31 9${String(Date.now()).slice(-6)}${String(++seq).padStart(3, "0")}`;

beforeAll(async () => {
  [ws, rx] = await Promise.all([newWorkspace(), startReceiver()]);
});
afterAll(async () => {
  await rx.close();
});

async function subscribe(w: Workspace, url: string, events: string[] = ["contact.created"]) {
  const res = await w.call("POST", "/webhooks", { url, events });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { subscription: { id: string; updatedAt: string }; secret: string };
}

async function deliveries(w: Workspace, id: string) {
  const res = await w.call("GET", `/webhooks/${id}/deliveries`);
  expect(res.status).toBe(200);
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies
  return res.body.data as any[];
}

const newContact = async (w: Workspace) => {
  const res = await w.call("POST", "/contacts", { name: "Webhook", phone: phone() });
  expect(res.status).toBe(201);
  return res.body as { id: string };
};

describe("webhook subscriptions (docs/api/webhooks.md)", () => {
  it("docs/api/webhooks.md §POST /webhooks: create answers {subscription, secret}; the secret is never shown again", async () => {
    const res = await ws.call("POST", "/webhooks", {
      url: rx.url(path("crud")),
      events: ["contact.created", "opportunity.won", "contact.created"],
      description: "CRM sync",
    });
    expect(res.status).toBe(201);
    expect(res.body.secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
    const sub = res.body.subscription;
    expect(sub).toMatchObject({
      events: ["contact.created", "opportunity.won"],
      description: "CRM sync",
      active: true,
      failingSince: null,
      disabledReason: null,
    });
    expect(sub.id).toMatch(/^wh_/);
    const read = await ws.call("GET", `/webhooks/${sub.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(sub);
    const list = await ws.call("GET", "/webhooks");
    expect(list.body.nextCursor).toBeNull();
    expect(list.body.data.map((s: { id: string }) => s.id)).toContain(sub.id);
    expect(JSON.stringify([read.body, list.body])).not.toContain(res.body.secret);
  });

  it("docs/api/webhooks.md §Subscription: PATCH changes url, events and description and moves updatedAt; DELETE is 204, then 404", async () => {
    const { subscription } = await subscribe(ws, rx.url(path("patch")));
    await new Promise((r) => setTimeout(r, 5));
    const patched = await ws.call("PATCH", `/webhooks/${subscription.id}`, {
      url: rx.url(path("patched")),
      events: ["contact.updated"],
      description: null,
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ events: ["contact.updated"], description: null });
    expect(patched.body.url).toContain("/patched-");
    expect(patched.body.updatedAt > subscription.updatedAt).toBe(true);
    const same = await ws.call("PATCH", `/webhooks/${subscription.id}`, { events: ["contact.updated"] });
    expect(same.body.updatedAt).toBe(patched.body.updatedAt);
    expect((await ws.call("DELETE", `/webhooks/${subscription.id}`)).status).toBe(204);
    expect((await ws.call("GET", `/webhooks/${subscription.id}`)).status).toBe(404);
    expect((await ws.call("DELETE", `/webhooks/${subscription.id}`)).status).toBe(404);
  });

  it("docs/api/conventions.md §Errors: another workspace's subscription is a 404 on every route", async () => {
    const { subscription } = await subscribe(ws, rx.url(path("mine")));
    const other = await newWorkspace();
    for (const [method, suffix, body] of [
      ["GET", "", undefined],
      ["PATCH", "", { description: "x" }],
      ["DELETE", "", undefined],
      ["POST", "/rotate-secret", undefined],
      ["GET", "/deliveries", undefined],
    ] as const) {
      const res = await other.call(method, `/webhooks/${subscription.id}${suffix}`, body);
      expect(res.status, `${method} ${suffix}`).toBe(404);
      expect(res.body.error.code).toBe("not_found");
    }
  });

  it("docs/api/webhooks.md §Subscribable events: an unknown event type is a 400 that lists the subscribable ones", async () => {
    const res = await ws.call("POST", "/webhooks", { url: rx.url(path("x")), events: ["contact.deleted"] });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("validation_failed");
    expect(res.body.error.details[0].path).toBe("body.events.0");
    for (const e of ["contact.created", "opportunity.stage_changed", "meeting.outcome"])
      expect(res.body.error.details[0].message).toContain(e);
  });

  it("docs/api/webhooks.md: bad bodies are 400 validation_failed naming the field", async () => {
    for (const [body, field] of [
      [{ url: "not a url", events: ["contact.created"] }, "body.url"],
      [{ url: "ftp://example.com/x", events: ["contact.created"] }, "body.url"],
      [{ url: rx.url("/x"), events: [] }, "body.events"],
      [{ url: rx.url("/x") }, "body.events"],
      [{ url: rx.url("/x"), events: ["contact.created"], secret: "mine" }, "body.secret"],
      [{ url: rx.url("/x"), events: ["contact.created"], active: false }, "body.active"],
    ] as const) {
      const res = await ws.call("POST", "/webhooks", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(field);
    }
  });

  it("docs/api/webhooks.md §Subscribable events: subscribing needs webhooks.manage plus the read scope of every event (403 missing_scope naming it)", async () => {
    const contactsOnly = await keyFor(ws, ["webhooks.manage", "contacts.read"]);
    const res = await contactsOnly.call("POST", "/webhooks", {
      url: rx.url(path("scope")),
      events: ["contact.created", "opportunity.won", "meeting.booked"],
    });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("missing_scope");
    expect(res.body.error.details).toEqual([
      { path: "scope", message: "opportunities.read" },
      { path: "scope", message: "calendars.read" },
    ]);
    const ok = await contactsOnly.call("POST", "/webhooks", {
      url: rx.url(path("scope")),
      events: ["contact.updated"],
    });
    expect(ok.status).toBe(201);
    // Adding an event by PATCH needs its scope too.
    const patch = await contactsOnly.call("PATCH", `/webhooks/${ok.body.subscription.id}`, {
      events: ["opportunity.lost"],
    });
    expect(patch.status).toBe(403);
    expect(patch.body.error.details).toEqual([{ path: "scope", message: "opportunities.read" }]);
    const noManage = await keyFor(ws, ["contacts.read"]);
    const denied = await noManage.call("GET", "/webhooks");
    expect(denied.status).toBe(403);
    expect(denied.body.error.details).toEqual([{ path: "scope", message: "webhooks.manage" }]);
  });
});

describe("webhook deliveries (docs/api/webhooks.md §What a receiver gets, §Retries)", () => {
  it("docs/api/webhooks.md §Signature: each event is POSTed with the documented body and headers, signed with the secret", async () => {
    const p = path("deliver");
    const { subscription, secret } = await subscribe(ws, rx.url(p), ["contact.created", "contact.updated"]);
    const contact = await newContact(ws);
    const [got] = await waitFor(async () => (rx.at(p).length >= 1 ? rx.at(p) : undefined));
    expect(got!.headers["content-type"]).toBe("application/json");
    expect(got!.headers["user-agent"]).toBe("Funil-Webhooks/1");
    expect(got!.headers["x-funil-event"]).toBe("contact.created");
    expect(got!.headers["x-funil-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(signedWith(got!, secret)).toBe(true);
    expect(signedWith(got!, "whsec_wrong")).toBe(false);
    const t = Number(/t=(\d+)/.exec(String(got!.headers["x-funil-signature"]))![1]);
    expect(Math.abs(t - Date.now() / 1000)).toBeLessThan(30);
    expect(Object.keys(got!.body)).toEqual(["id", "type", "createdAt", "workspaceId", "data"]);
    expect(got!.body).toMatchObject({ type: "contact.created", workspaceId: ws.id });
    const read = await ws.call("GET", `/contacts/${contact.id}`);
    const { firstHumanTouchAt: _f, lastHumanTouchAt: _l, ...asListed } = read.body;
    expect(got!.body.data).toEqual(asListed);
    const [d] = await waitFor(async () => {
      const list = await deliveries(ws, subscription.id);
      return list[0]?.status === "delivered" ? list : undefined;
    });
    expect(d).toMatchObject({
      id: got!.headers["x-funil-delivery"],
      subscriptionId: subscription.id,
      event: "contact.created",
      status: "delivered",
      attempts: 1,
      responseStatus: 200,
      lastError: null,
    });
    expect(d.lastAttemptAt).toMatch(/Z$/);
  });

  it("docs/api/webhooks.md §What a receiver gets: one delivery per matching subscription and event; other events are not sent", async () => {
    const [a, b, c] = [path("fan-a"), path("fan-b"), path("fan-c")];
    await subscribe(ws, rx.url(a), ["contact.created"]);
    await subscribe(ws, rx.url(b), ["contact.created", "contact.updated"]);
    await subscribe(ws, rx.url(c), ["contact.updated"]);
    const other = await newWorkspace();
    await newContact(other);
    const contact = await newContact(ws);
    await waitFor(async () => rx.at(a).length >= 1 && rx.at(b).length >= 1);
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.at(a).map((r) => r.body.data.id)).toEqual([contact.id]);
    expect(rx.at(b).map((r) => r.body.data.id)).toEqual([contact.id]);
    expect(rx.at(c)).toEqual([]);
    expect(rx.at(a)[0]!.body.id).toBe(rx.at(b)[0]!.body.id);
    expect(rx.at(a)[0]!.headers["x-funil-delivery"]).not.toBe(rx.at(b)[0]!.headers["x-funil-delivery"]);
  });

  it("docs/api/webhooks.md §Retries 1-2: a failing receiver is retried on the schedule, 6 attempts, then dead", async () => {
    const p = path("fail");
    const { subscription, secret } = await subscribe(ws, rx.url(p, "fail"));
    await newContact(ws);
    const [d] = await waitFor(async () => {
      const list = await deliveries(ws, subscription.id);
      return list[0]?.status === "dead" ? list : undefined;
    }, 15_000);
    expect(d).toMatchObject({ status: "dead", attempts: 6, responseStatus: 500 });
    expect(d.lastError).toContain("500");
    const attempts = rx.at(p);
    expect(attempts).toHaveLength(6);
    for (const r of attempts) expect(signedWith(r, secret)).toBe(true);
    // Each gap is at least its delay of the schedule (JetStream redelivers after the nak's delay).
    attempts.slice(1).forEach((r, i) => {
      expect(r.at - attempts[i]!.at).toBeGreaterThanOrEqual(SCHEDULE[i]! - 20);
    });
    await new Promise((r) => setTimeout(r, 1500));
    expect(rx.at(p)).toHaveLength(6);
  });

  it("docs/api/webhooks.md §Retries 1: a redirect is a failure and is not followed; a later 2xx delivers", async () => {
    const p = path("redirect");
    const { subscription } = await subscribe(ws, rx.url(p, "redirect"));
    await newContact(ws);
    await waitFor(async () => (rx.at(p).length >= 1 ? true : undefined));
    rx.set(p, "ok");
    const [d] = await waitFor(async () => {
      const list = await deliveries(ws, subscription.id);
      return list[0]?.status === "delivered" ? list : undefined;
    });
    expect(d).toMatchObject({ attempts: 2, responseStatus: 200, lastError: null });
    expect(rx.at(`${p}-moved`)).toEqual([]);
  });

  it("docs/api/webhooks.md §Retries 1: a receiver that hangs fails by timeout and is retried", async () => {
    const p = path("hang");
    const { subscription } = await subscribe(ws, rx.url(p, "hang"));
    await newContact(ws);
    const [d] = await waitFor(async () => {
      const list = await deliveries(ws, subscription.id);
      return list[0]?.attempts >= 1 ? list : undefined;
    });
    expect(d.status).toBe("pending");
    expect(d.lastError).toContain("timeout");
    expect(d.responseStatus).toBeNull();
    rx.set(p, "ok");
    await waitFor(async () => {
      const list = await deliveries(ws, subscription.id);
      return list[0]?.status === "delivered" ? list : undefined;
    });
  });

  it("docs/api/webhooks.md §Retries: a receiver that hangs holds only its own share of the slots: another subscription's deliveries all arrive while it still hangs", async () => {
    // The test stack has 16 slots, 8 per subscription (tests/setup/stack.ts); 40 events hang at one
    // receiver, enough to take every slot if nothing held it to its share, and go fast to the other.
    const w = await newWorkspace();
    const slow = path("hangs-long");
    const fast = path("beside-it");
    await subscribe(w, rx.url(slow, "hang"));
    await subscribe(w, rx.url(fast));
    const n = 40;
    for (let i = 0; i < n; i += 10) await Promise.all(Array.from({ length: 10 }, () => newContact(w)));
    await waitFor(async () => (rx.at(fast).length >= n ? true : undefined));
    // Not one of the hanging attempts had been given up (1.5 s timeout) when the last fast one arrived,
    // and the hanging receiver then held its subscription's 8 slots at most.
    const lastFast = Math.max(...rx.at(fast).map((r) => r.at));
    const hung = rx.at(slow);
    expect(hung.filter((r) => r.abandonedAt !== undefined && r.abandonedAt <= lastFast)).toEqual([]);
    expect(hung.length).toBeGreaterThan(0);
    expect(hung.filter((r) => r.at <= lastFast).length).toBeLessThanOrEqual(8);
  });

  it("docs/api/webhooks.md §Retries 1: a refused connection is a failure", async () => {
    const { subscription } = await subscribe(ws, "http://127.0.0.1:9/nobody-listens");
    await newContact(ws);
    const [d] = await waitFor(async () => {
      const list = await deliveries(ws, subscription.id);
      return list[0]?.attempts >= 1 ? list : undefined;
    });
    expect(d.lastError).toBe("connection refused");
  });

  it("docs/api/webhooks.md §POST /webhooks/{id}/rotate-secret: after rotate-secret both the new and the old secret sign (two v1 values)", async () => {
    const p = path("rotate");
    const { subscription, secret: old } = await subscribe(ws, rx.url(p));
    const rotated = await ws.call("POST", `/webhooks/${subscription.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(old);
    await newContact(ws);
    const [got] = await waitFor(async () => (rx.at(p).length >= 1 ? rx.at(p) : undefined));
    expect(String(got!.headers["x-funil-signature"]).match(/v1=/g)).toHaveLength(2);
    expect(signedWith(got!, rotated.body.secret)).toBe(true);
    expect(signedWith(got!, old)).toBe(true);
  });

  it("docs/api/webhooks.md §Scope revoked: a key that loses the read scope deactivates the subscription at the next attempt (scope_revoked)", async () => {
    const p = path("revoked");
    const key = await keyFor(ws, ["webhooks.manage", "contacts.read"]);
    const { subscription } = await subscribe(key, rx.url(p));
    const scoped = await ws.admin("PATCH", `/keys/${key.keyId}`, { scopes: ["webhooks.manage"] });
    expect(scoped.status).toBe(200);
    await newContact(ws);
    const sub = await waitFor(async () => {
      const res = await ws.call("GET", `/webhooks/${subscription.id}`);
      return res.body.active === false ? res.body : undefined;
    });
    expect(sub).toMatchObject({ active: false, disabledReason: "scope_revoked" });
    expect(sub.updatedAt > subscription.updatedAt).toBe(true);
    const [d] = await deliveries(ws, subscription.id);
    expect(d).toMatchObject({ status: "dead", attempts: 0 });
    expect(d.lastError).toContain("contacts.read");
    expect(rx.at(p)).toEqual([]);
    // Later events are not even queued for an inactive subscription.
    await newContact(ws);
    await new Promise((r) => setTimeout(r, 500));
    expect(await deliveries(ws, subscription.id)).toHaveLength(1);
  });

  it("docs/api/webhooks.md §Scope revoked: a revoked key deactivates its subscriptions (scope_revoked); active: true with a good key reactivates", async () => {
    const p = path("key-revoked");
    const key = await keyFor(ws, ["webhooks.manage", "contacts.read"]);
    const { subscription } = await subscribe(key, rx.url(p));
    expect((await ws.admin("DELETE", `/keys/${key.keyId}`)).status).toBe(204);
    await newContact(ws);
    await waitFor(async () => {
      const res = await ws.call("GET", `/webhooks/${subscription.id}`);
      return res.body.disabledReason === "scope_revoked" ? true : undefined;
    });
    const back = await ws.call("PATCH", `/webhooks/${subscription.id}`, { active: true });
    expect(back.body).toMatchObject({ active: true, disabledReason: null, failingSince: null });
    await newContact(ws);
    await waitFor(async () => (rx.at(p).length >= 1 ? true : undefined));
  });

  it("docs/api/webhooks.md §Circuit breaker 3: failing without a success for the breaker window deactivates (circuit_breaker); pending deliveries end dead", async () => {
    const p = path("breaker");
    const { subscription } = await subscribe(ws, rx.url(p, "fail"));
    await newContact(ws);
    const failing = await waitFor(async () => {
      const res = await ws.call("GET", `/webhooks/${subscription.id}`);
      return res.body.failingSince ? res.body : undefined;
    });
    expect(failing.active).toBe(true);
    // Events keep coming while the receiver keeps failing: after 6 s the breaker opens.
    let sub: { active: boolean } | undefined;
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      await newContact(ws);
      sub = (await ws.call("GET", `/webhooks/${subscription.id}`)).body;
      if (!sub?.active) break;
      await new Promise((r) => setTimeout(r, 400));
    }
    expect(sub).toMatchObject({
      active: false,
      disabledReason: "circuit_breaker",
      failingSince: failing.failingSince,
    });
    const list = await deliveries(ws, subscription.id);
    expect(list.length).toBeGreaterThan(3);
    expect(list.every((d) => d.status === "dead")).toBe(true);
    const back = await ws.call("PATCH", `/webhooks/${subscription.id}`, { active: true });
    expect(back.body).toMatchObject({ active: true, disabledReason: null, failingSince: null });
  });

  it("docs/api/webhooks.md §GET /webhooks/{id}/deliveries: it gives the 50 most recent, newest first, nextCursor null", async () => {
    const { subscription } = await subscribe(ws, rx.url(path("many")));
    for (let i = 0; i < 52; i++) await newContact(ws);
    // No cursor on this list; `limit` (1..500, as on every list) only keeps the first of the 50.
    const list = await ws.call("GET", `/webhooks/${subscription.id}/deliveries?cursor=abc`);
    expect(list.status).toBe(400);
    expect(list.body.error.code).toBe("validation_failed");
    const res = await waitFor(async () => {
      const r = await ws.call("GET", `/webhooks/${subscription.id}/deliveries`);
      return r.body.data.length === 50 ? r : undefined;
    });
    expect(res.body.nextCursor).toBeNull();
    const created = res.body.data.map((d: { createdAt: string }) => d.createdAt);
    expect([...created].sort().reverse()).toEqual(created);
    const five = await ws.call("GET", `/webhooks/${subscription.id}/deliveries?limit=5`);
    expect(five.body.data).toHaveLength(5);
    expect(five.body.nextCursor).toBeNull();
  });
});
