import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayUrl, request } from "../helpers.js";
import { type Browser, launchChromium, type Page } from "./chromium.js";

/**
 * /docs as a reader sees it: rendered by headless Chromium on a machine with no way out (every name
 * but the gateway's address resolves to nothing), every request the page makes recorded.
 */

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

/** Where the screenshot of the rendered page is left for a human to look at. */
const SCREENSHOT = join(process.cwd(), ".data", "browser", "docs.png");

let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium([
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--window-size=1280,900",
  ]);
}, 30_000);

afterAll(async () => {
  await browser?.close();
});

/** Every request the page made over the network, and every one that failed (a CSP refusal included). */
function traffic(page: Page) {
  // data: URLs (Swagger UI's inline icons) are in the page already: they reach no network.
  const sent = page.events
    .filter((e) => e.method === "Network.requestWillBeSent")
    .map((e) => e.params.request.url as string)
    .filter((url) => !url.startsWith("data:"));
  const failed = page.events
    .filter((e) => e.method === "Network.loadingFailed")
    .map((e) => `${e.params.errorText} ${e.params.blockedReason ?? ""}`);
  return { sent, failed };
}

describe("/docs in headless Chromium, offline", () => {
  let page: Page;
  beforeAll(async () => {
    page = await browser.page();
    await page.goto(`${gatewayUrl()}/docs`);
  }, 30_000);

  it("docs/api/conventions.md §Format: every guide section renders, in order, visible and titled", async () => {
    const guides =
      await page.evaluate(`[...document.querySelectorAll("#guides > section.guide")].map((s) => ({
      id: s.id,
      title: s.querySelector("h2")?.textContent ?? "",
      height: s.getBoundingClientRect().height,
      linked: document.querySelector('nav a[href="#' + s.id + '"]') !== null,
    }))`);
    expect(guides.map((g: { id: string }) => g.id)).toEqual(GUIDES);
    for (const guide of guides) {
      expect(guide.title, guide.id).toMatch(/\w/);
      expect(guide.height, guide.id).toBeGreaterThan(40);
      expect(guide.linked, guide.id).toBe(true);
    }
  });

  it("every operation of the OpenAPI document has its section, and the inline style applies (the CSP lets it)", async () => {
    const openapi = (await request("GET", `${gatewayUrl()}/api/v1/openapi.json`)).body;
    const ids = Object.values<Record<string, { operationId?: string }>>(openapi.paths)
      .flatMap((item) => Object.values(item))
      .map((op) => op?.operationId)
      .filter(Boolean);
    const rendered = await page.evaluate(
      `[...document.querySelectorAll("section.operation")].map((s) => s.dataset.operation)`,
    );
    expect(new Set(rendered)).toEqual(new Set(ids));
    const nav = await page.evaluate(`getComputedStyle(document.querySelector("nav")).position`);
    expect(nav).toBe("sticky");
  });

  it("works offline: the page asks nothing of any origin but the gateway, and nothing it asked failed", () => {
    const { sent, failed } = traffic(page);
    expect(sent.length).toBeGreaterThan(0);
    for (const url of sent) expect(new URL(url).origin).toBe(new URL(gatewayUrl()).origin);
    expect(failed).toEqual([]);
    expect(page.console().filter((line) => line.startsWith("uncaught"))).toEqual([]);
  });

  it("a screenshot of the first screen shows the page (left in .data/browser/docs.png)", async () => {
    const { data } = await page.send("Page.captureScreenshot", { format: "png" });
    const png = Buffer.from(data, "base64");
    expect(png.subarray(1, 4).toString()).toBe("PNG");
    // A blank or unstyled first screen compresses to a few kilobytes.
    expect(png.length).toBeGreaterThan(20_000);
    await mkdir(join(SCREENSHOT, ".."), { recursive: true });
    await writeFile(SCREENSHOT, png);
  });
});

describe("/docs/explorer in headless Chromium, offline", () => {
  it("Swagger UI loads its assets and the OpenAPI document from the gateway only", async () => {
    const page = await browser.page();
    await page.goto(`${gatewayUrl()}/docs/explorer/`);
    // The UI renders the document's operations once it has fetched it.
    const operations = await page.evaluate(`new Promise((resolve) => {
      const started = Date.now();
      const poll = () => {
        const n = document.querySelectorAll(".opblock").length;
        if (n > 0 || Date.now() - started > 10000) resolve(n);
        else setTimeout(poll, 50);
      };
      poll();
    })`);
    expect(operations).toBeGreaterThan(40);
    const { sent, failed } = traffic(page);
    expect(sent.some((url) => url.endsWith("/openapi.json") || url.includes("/json"))).toBe(true);
    for (const url of sent) expect(new URL(url).origin).toBe(new URL(gatewayUrl()).origin);
    expect(failed).toEqual([]);
  });
});
