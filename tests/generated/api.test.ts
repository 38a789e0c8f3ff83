import fc from "fast-check";
import { afterAll, describe, expect, inject, it } from "vitest";
import { admin, newWorkspace } from "../helpers.js";
import {
  type Answer,
  fingerprinter,
  loadDocument,
  type Operation,
  operations,
  RUNS,
  responseChecker,
  type Sent,
  send,
} from "./harness.js";
import { populatedWorkspace } from "./populate.js";
import { invalidRequest, validRequest } from "./requests.js";

/*
 * Generated from the OpenAPI document: every operation, valid and invalid requests. Each answer has a
 * status the document lists for that operation and a body that matches its schema, never a 5xx, and a
 * 4xx writes nothing. A route that lands later is covered here without a new test.
 */
const doc = await loadDocument();
const ops = operations(doc);
const check = responseChecker(doc);
const fingerprint = await fingerprinter();
const { ws, pools } = await populatedWorkspace(ops);

// The admin routes get a workspace of their own, with a key and a member they may revoke or change.
const adminWs = await newWorkspace({ name: "Generated admin tests" });
const spareKey = await admin("POST", `/workspaces/${adminWs.id}/keys`, {
  name: "spare",
  scopes: ["tasks.read"],
});
const spareMember = await admin("POST", `/workspaces/${adminWs.id}/members`, {
  name: "Spare",
  email: "spare@example.com",
  role: "atendente",
});
const adminPools = { workspaces: [adminWs.id], keys: [spareKey.body.key.id], members: [spareMember.body.id] };

// The learner routes answer only an operator workspace's key with platform.read (docs/api/learners.md (operator workspace and platform.read)):
// walked with another key, every request would stop at the 403.
const operator = await newWorkspace({
  name: "Generated platform tests",
  operator: true,
  scopes: ["platform.read"],
});
const keyOf = (o: Operation) =>
  o.admin ? inject("adminToken") : o.path.startsWith("/api/v1/platform/") ? operator.key : ws.key;

afterAll(() => fingerprint.close());

/**
 * An erasure goes on in scheduling and webhooks after its answer (docs/api/contacts.md §POST /contacts/{id}/erase),
 * as the timeline's consumers do: the workspace's rows are let settle (the same digest twice, 300 ms
 * apart) before the next request is judged by them.
 */
async function settled(workspace: string) {
  let last = await fingerprint.of(workspace);
  for (let i = 0; i < 30; i++) {
    await new Promise((r) => setTimeout(r, 300));
    const now = await fingerprint.of(workspace);
    if (now === last) return;
    last = now;
  }
}

async function exchange(o: Operation, req: Sent): Promise<Answer> {
  const workspace = o.admin ? adminWs.id : ws.id;
  const before = await fingerprint.of(workspace);
  const answer = await send(req, keyOf(o));
  const problems = check(o, answer);
  if (answer.status >= 400 && (await fingerprint.of(workspace)) !== before)
    problems.push(`a ${answer.status} changed the workspace's data: ${answer.text.slice(0, 200)}`);
  expect(
    problems,
    `${req.method} ${req.path} ${JSON.stringify(req.query)} ${req.body?.slice(0, 300)}`,
  ).toEqual([]);
  if (answer.status < 300 && o.path.endsWith("/erase")) await settled(workspace);
  return answer;
}

describe.each(ops.map((o) => [`${o.method} ${o.path}`, o] as const))("generated: %s", (_, o) => {
  const p = o.admin ? adminPools : pools;

  it("docs/api/conventions.md §Errors: valid requests get a documented status and body, never a 5xx; a 4xx writes nothing", async () => {
    await fc.assert(
      fc.asyncProperty(validRequest(o, doc, p), async (req) => {
        await exchange(o, req);
      }),
      { numRuns: RUNS },
    );
  });

  it("docs/api/conventions.md §Errors: invalid requests (types, limits, NUL, surrogates, nesting, numbers, content types) get a documented 4xx that writes nothing", async () => {
    await fc.assert(
      fc.asyncProperty(invalidRequest(o, doc, p), async (req) => {
        await exchange(o, req);
      }),
      { numRuns: RUNS * 2 },
    );
  });
});
