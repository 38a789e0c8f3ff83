import { contact, deal, member, pipeline } from "../e2e/crm-fixtures.js";
import { calendar } from "../e2e/scheduling-fixtures.js";
import { newWorkspace, type Workspace, waitFor } from "../helpers.js";
import type { Operation } from "./harness.js";
import type { Json, Pools } from "./schema-arbitrary.js";

/**
 * A workspace with a little of everything, and the ids of what it holds by list (`contacts`,
 * `opportunities`, `stages`…), read back through every list operation of the document.
 */
export async function populatedWorkspace(ops: Operation[]): Promise<{ ws: Workspace; pools: Pools }> {
  const ws = await newWorkspace({ name: "Generated tests" });
  const [m1] = [await member(ws), await member(ws)];
  const p = await pipeline(ws);
  await ws.admin("POST", `/workspaces/${ws.id}/custom-fields`, {
    entity: "contact",
    fieldKey: "plan",
    label: "Plano",
    type: "select",
    options: ["free", "pro"],
  });
  // A webhook subscription, so that the contacts below leave deliveries to resend and attempts to read.
  const hook = await ws.call("POST", "/webhooks", {
    url: "http://127.0.0.1:9/hook",
    events: ["contact.created"],
  });
  if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${JSON.stringify(hook.body)}`);
  const contacts = [await contact(ws), await contact(ws, { phone: "+55 11 90000-0001" }), await contact(ws)];
  for (const c of contacts.slice(0, 2)) await deal(ws, { contactId: c.id, pipelineId: p.id });
  for (const c of contacts.slice(0, 2))
    await ws.call("POST", "/tasks", { title: "Call back", contactId: c.id, assigneeUserId: m1!.id });
  await ws.call("POST", "/notes", { contactId: contacts[0]!.id, body: "First call", userId: m1!.id });
  // A calendar whose assignee is the first member, and a meeting on it: appointment bodies name both.
  const cal = await calendar(ws, { assigneeUserIds: [m1!.id] });
  const booked = await ws.call("POST", "/appointments", {
    calendarId: cal.id,
    contactId: contacts[0]!.id,
    assigneeUserId: m1!.id,
    startAt: "2031-01-01T10:00:00.000Z",
  });
  if (booked.status !== 201) throw new Error(`appointment: ${booked.status} ${JSON.stringify(booked.body)}`);
  const deliveries = await settledDeliveries(ws, hook.body.subscription.id);
  return { ws, pools: { ...(await poolsOf(ws, ops)), deliveries } };
}

/**
 * Ids by list, from every GET list operation without path parameters (and the stages of pipelines), and
 * a cursor of each list that has a second page (`cursor <path>`).
 */
export async function poolsOf(ws: Workspace, ops: Operation[]): Promise<Pools> {
  const pools: Pools = {};
  for (const o of ops) {
    if (o.admin || o.method !== "GET" || o.path.includes("{")) continue;
    const res = await ws.call("GET", o.path.replace(/^\/api\/v1/, ""));
    if (!Array.isArray(res.body?.data)) continue;
    const segment = o.path.split("/").pop()!;
    pools[segment] = res.body.data.map((item: Json) => item.id).filter(Boolean);
    const stages = res.body.data.flatMap((item: Json) => item.stages ?? []).map((s: Json) => s.id);
    if (stages.length) pools.stages = stages;
    const page = await ws.call("GET", `${o.path.replace(/^\/api\/v1/, "")}?limit=1`);
    if (page.body?.nextCursor) pools[`cursor ${o.path}`] = [page.body.nextCursor];
  }
  return pools;
}

/**
 * The subscription deactivated and its deliveries dead: nothing the webhooks service does later in the
 * background changes the workspace while a test compares its rows (a resend or a recover of an inactive
 * subscription is a 409 that queues nothing). Answers the deliveries' ids.
 */
async function settledDeliveries(ws: Workspace, subscriptionId: string): Promise<string[]> {
  const list = async (): Promise<Json[]> =>
    (await ws.call("GET", `/webhooks/${subscriptionId}/deliveries`)).body?.data ?? [];
  // One delivery per contact created above, once their events are fanned out.
  await waitFor(async () => ((await list()).length === 3 ? true : undefined), 20_000);
  await ws.call("PATCH", `/webhooks/${subscriptionId}`, { active: false });
  return waitFor(async () => {
    const all = await list();
    return all.every((d) => d.status === "dead") ? all.map((d) => d.id) : undefined;
  }, 20_000);
}
