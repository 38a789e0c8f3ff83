import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type GatewayCopy,
  gatewayCopy,
  gatewayUrl,
  newWorkspace,
  type Workspace,
} from "../../../tests/helpers.js";
import { backoff, createFunil, FunilError, RetryBudget } from "./index.js";
import { signWebhook, verifyWebhookSignature, WebhookSignatureError } from "./webhooks.js";

/** @funil/client against the test stack's gateway (docs/api/conventions.md). */

let ws: Workspace;
const unique = () => `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
const client = (extra: Partial<Parameters<typeof createFunil>[0]> = {}, url = gatewayUrl(), key = ws.key) =>
  createFunil({ apiKey: key, baseUrl: url, retry: { baseDelayMs: 20 }, ...extra });

/** The real fetch, watched: each try's method, path and Idempotency-Key. */
function watched(fault?: (request: Request, tries: number) => "drop-answer" | undefined) {
  const tries: Array<{ method: string; path: string; key: string | null }> = [];
  const impl = async (input: Request | string | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    tries.push({
      method: request.method,
      path: new URL(request.url).pathname,
      key: request.headers.get("idempotency-key"),
    });
    const response = await fetch(request);
    // The request reached the API and did its work; the answer is lost on the way back.
    if (fault?.(request, tries.length) === "drop-answer")
      throw new TypeError("fetch failed: connection reset");
    return response;
  };
  return { tries, fetch: impl as typeof fetch };
}

beforeAll(async () => {
  ws = await newWorkspace();
});

describe("@funil/client: one typed method per operation", () => {
  it("creates and reads through the operations of the OpenAPI document", async () => {
    const funil = client();
    const email = `c${unique()}@example.com`;
    const created = await funil.upsertContact({ body: { name: "Ana", email } });
    expect(created.email).toBe(email);
    const read = await funil.getContact({ params: { path: { id: created.id } } });
    expect(read.id).toBe(created.id);
  });

  it("every failure is a FunilError with code, status, details and the request id", async () => {
    const funil = client();
    const missing = await funil.getContact({ params: { path: { id: "ct_nope" } } }).catch((e) => e);
    expect(missing).toBeInstanceOf(FunilError);
    expect(missing).toMatchObject({ code: "not_found", status: 404 });
    expect(missing.requestId).toMatch(/.+/);
    const bad = await funil.createTask({ body: { title: "" } }).catch((e) => e);
    expect(bad).toMatchObject({ code: "validation_failed", status: 400 });
    expect(bad.details[0].path).toBe("body.title");
    const unreachable = await client({ retry: { maxRetries: 0 } }, "http://127.0.0.1:9")
      .listContacts()
      .catch((e) => e);
    expect(unreachable).toMatchObject({ name: "FunilError", code: "network_error", status: 0 });
  });
});

describe("@funil/client: lists", () => {
  it("for await walks every page, the cursor followed, pageSize as each page's limit", async () => {
    const tag = `t${unique()}`;
    const funil = client();
    for (let i = 0; i < 5; i++)
      await funil.upsertContact({ body: { name: `L${i}`, email: `${tag}${i}@example.com`, tags: [tag] } });
    const w = watched();
    const seen: string[] = [];
    for await (const c of client({ fetch: w.fetch }).list("listContacts", {
      params: { query: { tag } },
      pageSize: 2,
    }))
      seen.push(c.name ?? "");
    expect(seen).toEqual(["L0", "L1", "L2", "L3", "L4"]);
    expect(w.tries).toHaveLength(3);
  });
});

describe("@funil/client: retries and Idempotency-Key", () => {
  it("an answer lost on the way back is retried with the same key: the work is done once", async () => {
    const w = watched((request, n) => (request.method === "POST" && n === 1 ? "drop-answer" : undefined));
    const funil = client({ fetch: w.fetch });
    const title = `Call ${unique()}`;
    const task = await funil.createTask({ body: { title } });
    expect(task.title).toBe(title);
    expect(w.tries).toHaveLength(2);
    expect(w.tries[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(w.tries[1]!.key).toBe(w.tries[0]!.key);
    const all = [];
    for await (const t of client().list("listTasks", { pageSize: 500 })) if (t.title === title) all.push(t);
    expect(all).toHaveLength(1);
  });

  it("a POST that takes no Idempotency-Key is not sent again once it may have reached the API", async () => {
    const w = watched((request) => (request.method === "POST" ? "drop-answer" : undefined));
    const err = await client({ fetch: w.fetch })
      .restoreOpportunity({ params: { path: { id: "opp_nope" } } })
      .catch((e) => e);
    expect(err).toMatchObject({ name: "FunilError", code: "network_error" });
    expect(w.tries).toEqual([{ method: "POST", path: "/api/v1/opportunities/opp_nope/restore", key: null }]);
  });

  it("the caller's own Idempotency-Key is sent as given; reads carry none", async () => {
    const w = watched();
    const funil = client({ fetch: w.fetch });
    const key = `mine-${unique()}`;
    const a = await funil.createTask({ body: { title: "once" }, idempotencyKey: key });
    const b = await funil.createTask({ body: { title: "once" }, idempotencyKey: key });
    expect(b.id).toBe(a.id);
    await funil.listTasks();
    expect(w.tries.map((t) => t.key)).toEqual([key, key, null]);
  });

  describe("against a gateway copy with a small rate limit, and one whose crm is away", () => {
    let limited: GatewayCopy;
    let orphan: GatewayCopy;
    // A workspace of its own: the rate limit's counters are shared by every gateway copy.
    let mine: Workspace;
    beforeAll(async () => {
      mine = await newWorkspace();
      [limited, orphan] = await Promise.all([
        gatewayCopy({ RATE_LIMIT_MAX: "2", RATE_LIMIT_WINDOW_MS: "1000" }),
        gatewayCopy({ CRM_URL: "http://127.0.0.1:9", UPSTREAM_TIMEOUT_MS: "2000" }),
      ]);
    });
    afterAll(async () => {
      await Promise.all([limited?.stop(), orphan?.stop()]);
    });

    it("a 429 is retried after retry-after, and the call succeeds", async () => {
      const retries: Array<{ delayMs: number; reason: string }> = [];
      const funil = client({ onRetry: (r) => retries.push(r) }, limited.url, mine.key);
      const started = Date.now();
      const results = await Promise.all(Array.from({ length: 4 }, () => funil.listTasks()));
      expect(results).toHaveLength(4);
      expect(retries.some((r) => r.reason === "status 429")).toBe(true);
      const waited = retries.find((r) => r.reason === "status 429")!.delayMs;
      expect(waited).toBeGreaterThanOrEqual(1000 * 0.5);
      expect(Date.now() - started).toBeGreaterThanOrEqual(waited);
    });

    it("a 503 is retried until the tries run out, then thrown as unavailable with retryAfter", async () => {
      const retries: string[] = [];
      const funil = client(
        { retry: { maxRetries: 2, maxDelayMs: 50 }, onRetry: (r) => retries.push(r.reason) },
        orphan.url,
      );
      const err = await funil.listTasks().catch((e) => e);
      expect(err).toMatchObject({ name: "FunilError", code: "unavailable", status: 503 });
      expect(err.retryAfter).toBeGreaterThan(0);
      expect(retries).toEqual(["status 503", "status 503"]);
    });

    it("the retry budget stops retries once spent", async () => {
      const retries: string[] = [];
      const funil = client(
        {
          retry: { maxRetries: 5, maxDelayMs: 10, budgetRatio: 0, minRetriesPerSecond: 0.001 },
          onRetry: (r) => retries.push(r.reason),
        },
        orphan.url,
      );
      for (let i = 0; i < 4; i++) await funil.listTasks().catch(() => {});
      // The bucket starts with 10 tokens and nothing refills it: 10 retries in all, not 4 × 5.
      expect(retries).toHaveLength(10);
    });
  });

  it("a timeout per call and an AbortSignal per call, both FunilErrors", async () => {
    // A server that takes the connection and never answers: the timeout, not the API's speed, decides.
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const hanging = client({ retry: { maxRetries: 0 } }, `http://127.0.0.1:${port}`);
      const started = Date.now();
      const slow = await hanging.listTasks({ timeoutMs: 50 }).catch((e) => e);
      expect(slow).toMatchObject({ name: "FunilError", code: "timeout", status: 0 });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
    const funil = client({ retry: { maxRetries: 0 } });
    const controller = new AbortController();
    controller.abort();
    const aborted = await funil.listTasks({ signal: controller.signal }).catch((e) => e);
    expect(aborted).toMatchObject({ name: "FunilError", code: "aborted" });
  });

  it("backoff: retry-after when given (with a little jitter), else full jitter under base·2^n", () => {
    const retry = {
      maxRetries: 4,
      baseDelayMs: 100,
      maxDelayMs: 5_000,
      budgetRatio: 0.2,
      minRetriesPerSecond: 2,
    };
    for (let i = 0; i < 50; i++) {
      const told = backoff(1, retry, 2);
      expect(told).toBeGreaterThanOrEqual(2000);
      expect(told).toBeLessThan(2100);
      expect(backoff(3, retry)).toBeLessThan(400);
      expect(backoff(10, retry)).toBeLessThanOrEqual(5000);
    }
    const budget = new RetryBudget(0.5, 0, 1);
    expect(budget.withdraw()).toBe(true);
    expect(budget.withdraw()).toBe(false);
    budget.deposit();
    budget.deposit();
    expect(budget.withdraw()).toBe(true);
  });
});

describe("@funil/client/webhooks", () => {
  it("re-exports the signature check", () => {
    const body = '{"type":"contact.created"}';
    const t = Math.floor(Date.now() / 1000);
    const header = `t=${t},v1=${signWebhook(body, t, "whsec_x")}`;
    expect(verifyWebhookSignature(body, header, "whsec_x").timestamp).toBe(t);
    expect(() => verifyWebhookSignature(body, header, "whsec_y")).toThrow(WebhookSignatureError);
  });
});
