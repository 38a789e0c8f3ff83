import { WEBHOOK_EVENTS } from "@funil/schemas";
import { SCOPES } from "../keys.js";

/**
 * The guides that open /docs, in the order a newcomer needs them. Each says
 * the rule in a few lines and shows it; docs/api/*.md holds the full text.
 */
export interface Guide {
  id: string;
  title: string;
  html: string;
}

const code = (text: string) => `<pre><code>${text.replace(/&/g, "&amp;").replace(/</g, "&lt;")}</code></pre>`;

const firstCall: Guide = {
  id: "first-call",
  title: "Your first call",
  html: `<p>The API answers under <code>/api/v1</code> with JSON. Every call carries an API key as a bearer
token. Ask your administrator for a key (the admin API creates them), then:</p>
${code(`export FUNIL_URL=http://localhost:3000 FUNIL_KEY=fnl_…
curl -s "$FUNIL_URL/api/v1/contacts" \\
  -H "Authorization: Bearer $FUNIL_KEY" -H 'content-type: application/json' \\
  -d '{"name": "Ana", "phone": "+55 11 91234-5678"}'`)}
<p>The same from TypeScript, with <code>@funil/client</code> (packages/client; Node 20+ and browsers):</p>
${code(`import { createFunil } from "@funil/client";

const funil = createFunil({ apiKey: process.env.FUNIL_KEY!, baseUrl: process.env.FUNIL_URL! });
const contact = await funil.upsertContact({ body: { name: "Ana", phone: "+55 11 91234-5678" } });`)}
<p>Each operation below is a method of the client named by its operation id.</p>`,
};

const keys: Guide = {
  id: "keys-and-scopes",
  title: "Keys and scopes",
  html: `<p>A key belongs to one workspace: everything you read or write is that workspace's, and the
workspace is never taken from the request. A key holds scopes; a route needs its scope, else
<code>403 missing_scope</code> (the details name it). A revoked or unknown key is
<code>401 unauthorized</code>.</p>
<p>Scopes: ${SCOPES.map((s) => `<code>${s}</code>`).join(", ")}. Writing needs the <code>.write</code>
scope of the resource; webhooks need <code>webhooks.manage</code> and the read scope of every event they
subscribe to.</p>`,
};

const errors: Guide = {
  id: "errors",
  title: "Errors",
  html: `<p>Every error has one body, whatever the status:</p>
${code(`{"error": {"code": "validation_failed", "message": "…",
           "details": [{"path": "body.title", "message": "Required"}]}}`)}
<p>Branch on <code>code</code>, never on the message. <code>details[].path</code> names the field
(<code>body.…</code>, <code>query.…</code>, <code>path.id</code>, <code>headers.idempotency-key</code>).
Every answer carries <code>x-request-id</code>: quote it when reporting a problem. Bad input is always a
4xx; a <code>500 internal</code> is a bug; a <code>503 unavailable</code> is an outage worth retrying.
The client throws every failure as a <code>FunilError</code> with <code>code</code>,
<code>status</code>, <code>details</code> and <code>requestId</code> (status 0 and code
<code>network_error</code>, <code>timeout</code> or <code>aborted</code> when no answer came).</p>`,
};

const pagination: Guide = {
  id: "pagination",
  title: "Pagination",
  html: `<p>Lists answer <code>{"data": […], "nextCursor": "…" | null}</code>. Pass <code>nextCursor</code>
back as <code>cursor</code>, with the same filters, until it is <code>null</code>. <code>limit</code> is 1
to 500. Cursors are opaque and bound to the list, its filters and your workspace
(<code>400 invalid_cursor</code> otherwise). The client walks every page for you:</p>
${code(`for await (const deal of funil.list("listOpportunities", { params: { query: { status: "open" } }, pageSize: 200 }))
  console.log(deal.title);`)}`,
};

const rateLimits: Guide = {
  id: "rate-limits",
  title: "Rate limits",
  html: `<p>Each key may make a number of requests per window (by default 1200 a minute). Every answer
tells where you stand: <code>x-ratelimit-limit</code>, <code>x-ratelimit-remaining</code>,
<code>x-ratelimit-reset</code> (seconds). Over the limit the answer is <code>429 rate_limited</code> with
<code>retry-after</code> in seconds: wait that long, then try again.</p>`,
};

const retries: Guide = {
  id: "retries-and-idempotency",
  title: "Retries and idempotency",
  html: `<p>A timeout, a cut connection or a <code>503</code> does not tell whether a write happened. Send an
<code>Idempotency-Key</code> (1 to 255 visible ASCII characters, a UUID is best) with every POST that
creates or changes something, and the same key again on each retry:</p>
<ul><li>the same key and body within 24 h: the first answer again, with <code>idempotent-replayed: true</code>;</li>
<li>the same key while the first request runs: <code>409 idempotency_key_in_use</code>, retry a little later;</li>
<li>the same key with another path or body: <code>422 idempotency_key_reused</code>.</li></ul>
${code(`curl -X POST "$FUNIL_URL/api/v1/tasks" -H "Authorization: Bearer $FUNIL_KEY" \\
  -H "Idempotency-Key: 2b1f0c1e-8d4a-4c55-9a57-3f1d2a7e9b10" -H 'content-type: application/json' \\
  -d '{"title": "Call back"}'`)}
<p>The client does this on its own: it retries <code>429</code>, <code>503</code> and lost answers after
<code>retry-after</code> or a jittered backoff, within a retry budget, and sends one generated key on
every try of a POST (or yours: <code>{ idempotencyKey }</code>). <code>timeoutMs</code> and
<code>signal</code> bound each call.</p>`,
};

const webhooks: Guide = {
  id: "webhooks",
  title: "Webhooks and their signature",
  html: `<p><code>POST /webhooks</code> with <code>{url, events}</code> answers the subscription and its secret,
shown once. Each delivery is a POST with <code>x-funil-event</code>, <code>x-funil-delivery</code> and
<code>x-funil-signature: t=&lt;unix seconds&gt;,v1=&lt;hex&gt;</code>: HMAC-SHA256 of
<code>&lt;t&gt;.&lt;raw body&gt;</code> under the secret. Verify the raw bytes before parsing, refuse a
<code>t</code> more than 5 minutes away and a signature seen before, and handle each
<code>x-funil-delivery</code> once (a delivery may come again). Answer 2xx quickly; failures are
retried, and a subscription that keeps failing is deactivated.</p>
${code(`import { verifyWebhookSignature } from "@funil/client/webhooks";

verifyWebhookSignature(rawBody, req.headers["x-funil-signature"], process.env.WEBHOOK_SECRET!);
// throws WebhookSignatureError: reason malformed_header | timestamp_out_of_tolerance | signature_mismatch`)}`,
};

const events: Guide = {
  id: "events",
  title: "Events",
  html: `<p>Every change leaves an event <code>{"id", "type", "createdAt", "workspaceId", "data"}</code>, where
<code>data</code> is the resource as the API returns it. These can be subscribed to, each with the read
scope it needs:</p>
<table><thead><tr><th>event</th><th>scope</th></tr></thead><tbody>
${Object.entries(WEBHOOK_EVENTS)
  .map(([type, scope]) => `<tr><td><code>${type}</code></td><td><code>${scope}</code></td></tr>`)
  .join("\n")}
</tbody></table>
<p>An event is sent only for a change that committed, once per subscription; a replayed
Idempotency-Key emits nothing new.</p>
<p>A client that was down catches up without webhooks: <code>GET /events?after=&lt;last event id&gt;</code>
lists the same bodies, in the order they were emitted, of the types its key's read scopes allow
(<code>type</code> narrows them), kept 30 days.</p>
${code(`curl -s "$FUNIL_URL/api/v1/events?after=evt_…&limit=100" -H "Authorization: Bearer $FUNIL_KEY"`)}
<p>Who changed what: <code>GET /audit?entity=contact&amp;id=ct_…</code> (scope <code>audit.read</code>) lists
every change of the workspace, internal ones too, with the API key that made it (or <code>admin</code>), the
<code>x-request-id</code> of its request and the names of the fields it changed (never their values), kept
30 days.</p>`,
};

export const GUIDES: Guide[] = [firstCall, keys, errors, pagination, rateLimits, retries, webhooks, events];
