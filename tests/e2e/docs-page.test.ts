import { parseHTML } from "linkedom";
import { beforeAll, describe, expect, it } from "vitest";
import { OPERATION_ROUTES } from "../../packages/client/src/gen/openapi.js";
import { gatewayUrl, request } from "../helpers.js";

/** /docs teaches: guides first, every operation with curl and TypeScript samples, nothing fetched from elsewhere. */

const GUIDES = [
  "first-call",
  "keys-and-scopes",
  "errors",
  "pagination",
  "rate-limits",
  "retries-and-idempotency",
  "webhooks",
  "events",
];

let res: Response;
let html: string;
let document: ReturnType<typeof parseHTML>["document"];
// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document as JSON
let openapi: any;

beforeAll(async () => {
  res = await fetch(`${gatewayUrl()}/docs`);
  html = await res.text();
  document = parseHTML(html).document;
  openapi = (await request("GET", `${gatewayUrl()}/api/v1/openapi.json`)).body;
});

describe("/docs", () => {
  it("opens with the guides, in order, before the reference", () => {
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const guides = [...document.querySelectorAll("#guides > section.guide")].map((s) => s.id);
    expect(guides).toEqual(GUIDES);
    for (const id of GUIDES) expect(document.querySelector(`#${id} h2`)?.textContent?.trim()).toBeTruthy();
    expect(html.indexOf('id="guides"')).toBeLessThan(html.indexOf('id="reference"'));
    expect(document.querySelector("#events table")?.textContent).toContain("meeting.booked");
  });

  it("every operation of the OpenAPI document has a section with a curl and a TypeScript sample", () => {
    const ids: string[] = [];
    for (const item of Object.values<Record<string, { operationId?: string }>>(openapi.paths))
      for (const op of Object.values(item)) if (op?.operationId) ids.push(op.operationId);
    expect(ids.length).toBeGreaterThan(40);
    for (const id of ids) {
      const section = document.querySelector(`section.operation[data-operation="${id}"]`);
      expect(section, id).not.toBeNull();
      expect(section!.querySelector("pre.sample-curl")?.textContent, id).toMatch(/^curl -X /);
      const ts = section!.querySelector("pre.sample-typescript")?.textContent ?? "";
      // The public API's samples call the client's own method.
      if (id in OPERATION_ROUTES) expect(ts, id).toContain(`funil.${id}(`);
      else expect(ts, id).toContain("fetch(");
    }
  });

  it("a POST that takes an Idempotency-Key shows it in its curl sample; a list shows for await", () => {
    expect(document.querySelector('[data-operation="createTask"] pre.sample-curl')?.textContent).toContain(
      "Idempotency-Key",
    );
    expect(
      document.querySelector('[data-operation="listContacts"] pre.sample-typescript')?.textContent,
    ).toContain('for await (const item of funil.list("listContacts"');
  });

  it("works offline: no script, stylesheet, image or font from anywhere, and a CSP that forbids them", () => {
    expect(document.querySelectorAll("script, link[rel=stylesheet], iframe, img[src^=http]")).toHaveLength(0);
    for (const el of document.querySelectorAll("[src], link[href]"))
      expect(el.getAttribute("src") ?? el.getAttribute("href")).not.toMatch(/^(https?:)?\/\//);
    for (const style of document.querySelectorAll("style"))
      expect(style.textContent).not.toMatch(/@import|url\(/);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
  });

  it("the explorer (Swagger UI) moved to /docs/explorer, served from the gateway itself", async () => {
    const explorer = await fetch(`${gatewayUrl()}/docs/explorer/`);
    expect(explorer.status).toBe(200);
    expect(await explorer.text()).not.toMatch(/src="https?:\/\//);
  });
});
