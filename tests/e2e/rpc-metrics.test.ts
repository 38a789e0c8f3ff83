import { describe, expect, inject, it } from "vitest";
import { gatewayUrl, newWorkspace, request } from "../helpers.js";

/** A service's GET /metrics, as Prometheus scrapes it (plain HTTP/1.1 on its METRICS_PORT). */
async function scrape(service: string) {
  const res = await fetch(inject("metricsUrls")[service]!);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
  return res.text();
}

/** The value of one series of a scrape (0 when absent). */
function value(text: string, name: string, labels: Record<string, string>) {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const inside = line.slice(name.length + 1, line.indexOf("}"));
    const have = inside.split(",");
    if (wanted.every((w) => have.includes(w))) return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return 0;
}

const CONTACTS = { service: "funil.crm.v1.ContactService" };

describe("RPC RED metrics on each service (docs/operations.md §Metrics)", () => {
  it("calls through the gateway show in crm's funil_rpc_server_calls_total by method and code, and in its latency histogram", async () => {
    const ws = await newWorkspace({ scopes: ["contacts.read", "contacts.write"] });
    const auth = { authorization: `Bearer ${ws.key}` };
    const before = await scrape("crm");

    const phone = `+55 31 7${String(Date.now()).slice(-7)}`;
    const created = await request(
      "POST",
      `${gatewayUrl()}/api/v1/contacts`,
      { name: "Metrics", phone },
      auth,
    );
    expect(created.status).toBe(201);
    for (let i = 0; i < 3; i++)
      expect(
        (await request("GET", `${gatewayUrl()}/api/v1/contacts/${created.body.id}`, undefined, auth)).status,
      ).toBe(200);
    const missing = await request(
      "GET",
      `${gatewayUrl()}/api/v1/contacts/ct_missing_metrics`,
      undefined,
      auth,
    );
    expect(missing.status).toBe(404);

    const after = await scrape("crm");
    const calls = (text: string, method: string, code: string) =>
      value(text, "funil_rpc_server_calls_total", { ...CONTACTS, method, code });
    expect(calls(after, "UpsertContact", "ok") - calls(before, "UpsertContact", "ok")).toBe(1);
    expect(calls(after, "GetContact", "ok") - calls(before, "GetContact", "ok")).toBe(3);
    expect(calls(after, "GetContact", "not_found") - calls(before, "GetContact", "not_found")).toBe(1);
    // The histogram: every call observed once, in buckets that only grow.
    const count = (text: string) =>
      value(text, "funil_rpc_server_duration_seconds_count", { ...CONTACTS, method: "GetContact" });
    expect(count(after) - count(before)).toBe(4);
    const inf = value(after, "funil_rpc_server_duration_seconds_bucket", {
      ...CONTACTS,
      method: "GetContact",
      le: "+Inf",
    });
    const first = value(after, "funil_rpc_server_duration_seconds_bucket", {
      ...CONTACTS,
      method: "GetContact",
      le: "0.001",
    });
    expect(inf).toBe(count(after));
    expect(first).toBeLessThanOrEqual(inf);
    expect(
      value(after, "funil_rpc_server_duration_seconds_sum", { ...CONTACTS, method: "GetContact" }),
    ).toBeGreaterThan(0);
    // And the process's own metrics, prefixed like the gateway's.
    expect(after).toMatch(/^funil_crm_process_cpu_seconds_total /m);
  });

  it("every service serves its metrics; anything but GET /metrics is a 404", async () => {
    for (const service of ["crm", "scheduling", "timeline", "learning", "webhooks"])
      expect(await scrape(service)).toContain("# TYPE funil_rpc_server_calls_total counter");
    const other = await fetch(inject("metricsUrls").crm!.replace("/metrics", "/other"));
    expect(other.status).toBe(404);
  });
});
