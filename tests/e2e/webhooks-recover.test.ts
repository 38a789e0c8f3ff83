import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newWorkspace, type Workspace, waitFor } from "../helpers.js";
import { type Receiver, signedWith, startReceiver } from "../receiver.js";

/*
 * A receiver that goes down, answers 500, then 301, then comes back; its owner resends one delivery,
 * recovers what it missed since a time, and reactivates a subscription the breaker disabled
 * (docs/api/webhooks.md §Resend and recover). The test stack retries after 200..1000 ms, six attempts,
 * and opens the breaker after 6 s of failing (tests/setup/stack.ts).
 */
let ws: Workspace;
let other: Workspace;
let rx: Receiver;
let seq = 0;
const path = (name: string) => `/${name}-${Date.now().toString(36)}-${++seq}`;
const phone = () => `+55 41 9${String(Date.now()).slice(-6)}${String(++seq).padStart(3, "0")}`;

beforeAll(async () => {
  [ws, other, rx] = await Promise.all([newWorkspace(), newWorkspace(), startReceiver()]);
});
afterAll(async () => {
  await rx.close();
});

async function subscribe(url: string) {
  const res = await ws.call("POST", "/webhooks", { url, events: ["contact.created"] });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { subscription: { id: string }; secret: string };
}

const newContact = async () => {
  const res = await ws.call("POST", "/contacts", { name: "Recover", phone: phone() });
  expect(res.status).toBe(201);
  return res.body as { id: string };
};

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies
const deliveriesOf = async (id: string): Promise<any[]> =>
  (await ws.call("GET", `/webhooks/${id}/deliveries`)).body.data;

/** Waits until every delivery of the subscription is in `status` (and there are `n` of them). */
const settled = (id: string, n: number, status: string) =>
  waitFor(async () => {
    const list = await deliveriesOf(id);
    return list.length === n && list.every((d) => d.status === status) ? list : undefined;
  }, 20_000);

describe("resend and recover (docs/api/webhooks.md §Resend and recover)", () => {
  it("resend: a dead delivery is sent again, the same event id and body, signed afresh; while pending it is a 409", async () => {
    const p = path("resend");
    const { subscription, secret } = await subscribe(rx.url(p, "down"));
    await newContact();
    // Down, then 500, then 301: each attempt fails, and the sixth leaves the delivery dead.
    await waitFor(async () => (rx.at(p).length >= 2 ? true : undefined));
    rx.set(p, "fail");
    await waitFor(async () => (rx.at(p).length >= 4 ? true : undefined));
    rx.set(p, "moved");
    const [dead] = await settled(subscription.id, 1, "dead");
    expect(dead).toMatchObject({ attempts: 6, responseStatus: 301 });
    const before = rx.at(p);
    expect(before.map((r) => r.status)).toContain(500);

    rx.set(p, "hang");
    const resent = await ws.call("POST", `/webhooks/${subscription.id}/deliveries/${dead.id}/resend`);
    expect(resent.status, JSON.stringify(resent.body)).toBe(202);
    expect(resent.body).toMatchObject({ id: dead.id, status: "pending", attempts: 6 });
    // Its attempt hangs: the delivery is pending, and a second resend doubles nothing.
    await waitFor(async () => (rx.at(p).length > before.length ? true : undefined));
    const twice = await ws.call("POST", `/webhooks/${subscription.id}/deliveries/${dead.id}/resend`);
    expect(twice).toMatchObject({ status: 409, body: { error: { code: "conflict" } } });

    rx.set(p, "ok");
    const [delivered] = await settled(subscription.id, 1, "delivered");
    expect(delivered).toMatchObject({ id: dead.id, responseStatus: 200 });
    const last = rx.at(p).at(-1)!;
    expect(last.raw).toBe(before[0]!.raw);
    expect(last.headers["x-funil-delivery"]).toBe(dead.id);
    expect(signedWith(last, secret)).toBe(true);
    expect(last.headers["x-funil-signature"]).not.toBe(before[0]!.headers["x-funil-signature"]);
    // A delivered one can be resent too (the receiver lost it): one more attempt, delivered again.
    const again = await ws.call("POST", `/webhooks/${subscription.id}/deliveries/${dead.id}/resend`);
    expect(again.status).toBe(202);
    await waitFor(async () =>
      rx.at(p).at(-1)!.status === 200 && rx.at(p).length >= before.length + 3 ? true : undefined,
    );
    expect(rx.at(p).at(-1)!.raw).toBe(before[0]!.raw);

    // docs/api/events.md §Who made a change: each resend that put the delivery back in line is in the audit,
    // with its key and request; the refused one (409) is not.
    const resends = await waitFor(async () => {
      const log = (await ws.call("GET", `/audit?entity=webhook&id=${subscription.id}`)).body.data;
      const found = log.filter((e: { type: string }) => e.type === "webhook.resent");
      return found.length >= 2 ? found : undefined;
    });
    expect(resends.map((e: { requestId: string }) => e.requestId)).toEqual([
      resent.headers.get("x-request-id"),
      again.headers.get("x-request-id"),
    ]);
    for (const e of resends)
      expect(e).toMatchObject({ actor: { type: "key", id: ws.keyId }, changes: ["deliveryIds"] });
  });

  it("recover: every dead delivery since a time is sent again, once; delivered and earlier ones are left alone", async () => {
    const p = path("recover");
    const { subscription } = await subscribe(rx.url(p, "ok"));
    await newContact();
    await settled(subscription.id, 1, "delivered");
    const since = new Date().toISOString();
    rx.set(p, "fail");
    for (let i = 0; i < 3; i++) await newContact();
    const dead = await waitFor(async () => {
      const list = await deliveriesOf(subscription.id);
      return list.filter((d) => d.status === "dead").length === 3 ? list : undefined;
    }, 20_000);
    rx.set(p, "ok");
    const sentBefore = rx.at(p).length;
    const res = await ws.call("POST", `/webhooks/${subscription.id}/recover`, { since });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toEqual({ queued: 3, notQueued: 0, nextSince: null });
    const recovered = await waitFor(async () => {
      const log = (await ws.call("GET", `/audit?entity=webhook&id=${subscription.id}`)).body.data;
      return log.find((e: { type: string }) => e.type === "webhook.resent");
    });
    expect(recovered).toMatchObject({
      actor: { type: "key", id: ws.keyId },
      requestId: res.headers.get("x-request-id"),
      changes: ["deliveryIds"],
    });
    await settled(subscription.id, 4, "delivered");
    const after = rx.at(p).slice(sentBefore);
    expect(after.map((r) => r.headers["x-funil-delivery"]).sort()).toEqual(
      dead
        .filter((d) => d.status === "dead")
        .map((d) => d.id)
        .sort(),
    );
    // Nothing dead is left in the window: a second recover queues nothing.
    const again = await ws.call("POST", `/webhooks/${subscription.id}/recover`, { since });
    expect(again.body).toEqual({ queued: 0, notQueued: 0, nextSince: null });
  });

  it("recover after the breaker: 409 until the subscription is reactivated, then each event arrives once, none twice", async () => {
    const p = path("breaker");
    const { subscription } = await subscribe(rx.url(p, "fail"));
    const since = new Date(Date.now() - 1_000).toISOString();
    let sub: { active: boolean; disabledReason: string | null } | undefined;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      await newContact();
      sub = (await ws.call("GET", `/webhooks/${subscription.id}`)).body;
      if (!sub?.active) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(sub).toMatchObject({ active: false, disabledReason: "circuit_breaker" });
    const refused = await ws.call("POST", `/webhooks/${subscription.id}/recover`, { since });
    expect(refused).toMatchObject({ status: 409, body: { error: { code: "conflict" } } });
    expect(refused.body.error.message).toContain("circuit_breaker");

    rx.set(p, "ok");
    const back = await ws.call("PATCH", `/webhooks/${subscription.id}`, { active: true });
    expect(back.body).toMatchObject({ active: true, disabledReason: null });
    const okFrom = rx.at(p).length;
    const res = await ws.call("POST", `/webhooks/${subscription.id}/recover`, { since });
    expect(res.status).toBe(202);
    const n = (await deliveriesOf(subscription.id)).length;
    expect(res.body.queued).toBe(n);
    await settled(subscription.id, n, "delivered");
    // The jobs the breaker cut short come back after their retry delay: they find the deliveries owned
    // by the recover's jobs and send nothing.
    await new Promise((r) => setTimeout(r, 2_500));
    const ids = rx
      .at(p)
      .slice(okFrom)
      .map((r) => r.headers["x-funil-delivery"]);
    expect(ids.length).toBe(n);
    expect(new Set(ids).size).toBe(n);
  });

  it("bad input is a 400; another workspace's subscription or delivery is a 404, and nothing is sent", async () => {
    const p = path("isolated");
    const { subscription } = await subscribe(rx.url(p, "fail"));
    await newContact();
    const [dead] = await settled(subscription.id, 1, "dead");
    const sent = rx.at(p).length;
    const recover = `/webhooks/${subscription.id}/recover`;
    expect((await ws.call("POST", recover, {})).status).toBe(400);
    expect((await ws.call("POST", recover, { since: "yesterday" })).status).toBe(400);
    const backwards = await ws.call("POST", recover, {
      since: "2030-01-02T00:00:00Z",
      until: "2030-01-01T00:00:00Z",
    });
    expect(backwards).toMatchObject({ status: 400, body: { error: { code: "validation_failed" } } });
    expect((await other.call("POST", recover, { since: "2020-01-01T00:00:00Z" })).status).toBe(404);
    const resend = `/webhooks/${subscription.id}/deliveries/${dead.id}/resend`;
    expect((await other.call("POST", resend)).status).toBe(404);
    expect((await ws.call("POST", `/webhooks/${subscription.id}/deliveries/dlv_nope/resend`)).status).toBe(
      404,
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.at(p).length).toBe(sent);
    expect((await deliveriesOf(subscription.id))[0]).toMatchObject({ status: "dead" });
  });
});

describe("the attempt log (docs/api/webhooks.md §Attempt log)", () => {
  it("every attempt: when, succeeded or failed, the status, how long, the first 1 KB of the answer, the error when none came", async () => {
    const p = path("log");
    const { subscription } = await subscribe(rx.url(p, "down"));
    await newContact();
    await waitFor(async () => (rx.at(p).length >= 1 ? true : undefined));
    rx.set(p, "fail");
    await waitFor(async () => (rx.at(p).length >= 2 ? true : undefined));
    rx.set(p, "moved");
    await waitFor(async () => (rx.at(p).length >= 3 ? true : undefined));
    rx.set(p, "big");
    const [delivery] = await settled(subscription.id, 1, "delivered");
    const log = await ws.call("GET", `/webhooks/${subscription.id}/attempts`);
    expect(log.status).toBe(200);
    const data = log.body.data as Array<Record<string, unknown>>;
    expect(data.length).toBe(delivery.attempts);
    expect(data.map((a) => a.at)).toEqual([...data.map((a) => a.at as string)].sort().reverse());
    const [ok, ...failed] = data;
    expect(ok).toMatchObject({
      deliveryId: delivery.id,
      event: "contact.created",
      status: "succeeded",
      responseStatus: 200,
      responseBody: "x".repeat(1024),
      error: null,
    });
    expect(failed.every((a) => a.status === "failed")).toBe(true);
    expect(failed).toContainEqual(
      expect.objectContaining({ responseStatus: 301, error: "redirect 301 not followed" }),
    );
    expect(failed).toContainEqual(
      expect.objectContaining({ responseStatus: 500, responseBody: "fail", error: "receiver answered 500" }),
    );
    const unanswered = failed.at(-1)!;
    expect(unanswered).toMatchObject({ responseStatus: null, responseBody: null });
    expect(unanswered.error).toMatch(/reset|closed|socket/);
    for (const a of data) {
      expect(a.durationMs).toBeGreaterThanOrEqual(0);
      expect(a.durationMs).toBeLessThan(5_000);
    }

    // Filters, and pages that neither skip nor repeat.
    const only = async (query: string) =>
      (await ws.call("GET", `/webhooks/${subscription.id}/attempts?${query}`)).body.data.map(
        (a: { id: string }) => a.id,
      );
    expect(await only("status=succeeded")).toEqual([ok!.id]);
    expect(await only("status=failed")).toEqual(failed.map((a) => a.id));
    expect(await only("event=contact.updated")).toEqual([]);
    expect(await only(`from=${encodeURIComponent(ok!.at as string)}`)).toEqual([ok!.id]);
    expect(await only(`to=${encodeURIComponent(ok!.at as string)}`)).toEqual(failed.map((a) => a.id));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await ws.call(
        "GET",
        `/webhooks/${subscription.id}/attempts?limit=1${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(page.status).toBe(200);
      seen.push(...page.body.data.map((a: { id: string }) => a.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(data.map((a) => a.id));

    // A cursor is its subscription's and its filters'; another workspace sees no log.
    const first = await ws.call("GET", `/webhooks/${subscription.id}/attempts?limit=1`);
    const other2 = await subscribe(rx.url(path("log-other")));
    const misused = await ws.call(
      "GET",
      `/webhooks/${other2.subscription.id}/attempts?limit=1&cursor=${first.body.nextCursor}`,
    );
    expect(misused).toMatchObject({ status: 400, body: { error: { code: "invalid_cursor" } } });
    const filtered = await ws.call(
      "GET",
      `/webhooks/${subscription.id}/attempts?limit=1&status=failed&cursor=${first.body.nextCursor}`,
    );
    expect(filtered.status).toBe(400);
    expect((await other.call("GET", `/webhooks/${subscription.id}/attempts`)).status).toBe(404);
    expect((await ws.call("GET", `/webhooks/${subscription.id}/attempts?status=maybe`)).status).toBe(400);
  });
});
