import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayCopy, gatewayCopy, gatewayUrl, newWorkspace, type Workspace } from "../helpers.js";
import { bundleClient } from "./bundle.js";
import { type Browser, launchChromium, type Page } from "./chromium.js";

/**
 * @funil/client in a real browser: a web app on its own origin (http://funil-app.test, a plain-http
 * origin that is not a secure context) loads the client bundled for browsers and calls the gateway
 * cross-origin, as the gateway's CORS_ORIGINS allows (docs/operations.md §Gateway).
 */

const APP_HOST = "funil-app.test";

/** The web app: its page runs the calls with the bundled client and leaves their outcome in `window.outcome`. */
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>funil client</title></head><body>
<script type="module">
import { createFunil, FunilError } from "/funil-client.js";

const given = new URLSearchParams(location.search);
const tag = given.get("tag");
const funil = createFunil({ apiKey: given.get("key"), baseUrl: given.get("api") });
const failure = (err) => ({
  isFunilError: err instanceof FunilError,
  name: err.name,
  code: err.code,
  status: err.status,
  requestId: err.requestId,
  message: err.message,
});

window.outcome = (async () => {
  const out = { secureContext: window.isSecureContext, statuses: [] };
  const body = { name: "Ana Browser", email: tag + "@example.com", tags: [tag] };
  const seen = (res) => out.statuses.push([res.status, res.headers.get("idempotent-replayed")]);
  const first = await funil.upsertContact({ body, idempotencyKey: "browser-" + tag, onResponse: seen });
  const again = await funil.upsertContact({ body, idempotencyKey: "browser-" + tag, onResponse: seen });
  out.sameContact = first.id === again.id;
  // Keys the client makes itself (crypto.randomUUID is not there outside secure contexts).
  for (let i = 1; i <= 4; i++)
    await funil.upsertContact({ body: { name: "Lead " + i, email: tag + i + "@example.com", tags: [tag] } });
  out.listed = [];
  for await (const contact of funil.list("listContacts", { params: { query: { tag } }, pageSize: 2 }))
    out.listed.push(contact.name);
  out.notFound = await funil.getContact({ params: { path: { id: "ct_nope" } } }).then(() => null, failure);
  const refused = createFunil({ apiKey: given.get("key"), baseUrl: given.get("closed"), retry: { maxRetries: 0 } });
  out.noCors = await refused.listContacts().then(() => null, failure);
  return out;
})();
</script></body></html>`;

let ws: Workspace;
let app: Server;
let appUrl: string;
let gateway: GatewayCopy;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  const bundled = await bundleClient();
  app = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://app").pathname;
    if (path === "/funil-client.js") res.writeHead(200, { "content-type": "text/javascript" }).end(bundled);
    else if (path === "/") res.writeHead(200, { "content-type": "text/html" }).end(PAGE);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
  appUrl = `http://${APP_HOST}:${(app.address() as AddressInfo).port}`;
  [ws, gateway, browser] = await Promise.all([
    newWorkspace(),
    gatewayCopy({ CORS_ORIGINS: appUrl }),
    // The app's name leads to this machine; every other name resolves to nothing.
    launchChromium([`--host-resolver-rules=MAP ${APP_HOST} 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1`]),
  ]);
  page = await browser.page();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await new Promise((resolve) => app?.close(resolve));
});

describe("@funil/client in headless Chromium, cross-origin", () => {
  // biome-ignore lint/suspicious/noExplicitAny: the page's outcome is plain JSON
  let outcome: any;
  beforeAll(async () => {
    const tag = `br${Date.now().toString(36)}`;
    const query = new URLSearchParams({ key: ws.key, api: gateway.url, closed: gatewayUrl(), tag });
    await page.goto(`${appUrl}/?${query}`);
    // No outcome: the module did not run (a bundle that fails to load); page.console() says why.
    outcome = await page.evaluate(
      `window.outcome ?? Promise.reject(new Error("the page's script did not run"))`,
    );
  }, 30_000);

  it("docs/operations.md §Gateway: a page on an origin CORS_ORIGINS lists creates a contact, replayed under its Idempotency-Key (docs/api/conventions.md §Idempotency-Key)", () => {
    expect(outcome.secureContext, "the app's origin is plain http, not a secure context").toBe(false);
    expect(outcome.statuses.slice(0, 2)).toEqual([
      [201, null],
      [201, "true"],
    ]);
    expect(outcome.sameContact).toBe(true);
  });

  it("docs/api/conventions.md §Lists and pagination: for await walks every page in the browser, the cursor followed", () => {
    expect(outcome.listed).toEqual(["Ana Browser", "Lead 1", "Lead 2", "Lead 3", "Lead 4"]);
    const pages = page.events.filter(
      (e) =>
        e.method === "Network.requestWillBeSent" &&
        e.params.request.method === "GET" &&
        e.params.request.url.startsWith(`${gateway.url}/api/v1/contacts?`),
    );
    expect(pages.map((e) => new URL(e.params.request.url).searchParams.get("limit"))).toEqual([
      "2",
      "2",
      "2",
    ]);
  });

  it("docs/api/conventions.md §Errors: a 404 is a FunilError with its code, status and the request id CORS exposes", () => {
    expect(outcome.notFound).toMatchObject({
      isFunilError: true,
      name: "FunilError",
      code: "not_found",
      status: 404,
    });
    expect(outcome.notFound.requestId).toMatch(/.+/);
  });

  it("docs/operations.md §Gateway: a gateway without CORS_ORIGINS is out of the page's reach: a FunilError network_error, status 0", () => {
    expect(outcome.noCors).toMatchObject({ isFunilError: true, code: "network_error", status: 0 });
  });

  it("nothing in the page failed: no uncaught error, no console error", () => {
    const problems = page.console().filter((line) => /^(uncaught|console\.error)/.test(line));
    expect(problems).toEqual([]);
  });
});
