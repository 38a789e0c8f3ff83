import { expect } from "vitest";
import type { Workspace } from "../helpers.js";

/** Shared set-up of the deal, funnel and task tests: members, a pipeline, contacts. */
let seq = 0;
const unique = () => `${Date.now().toString(36)}${(++seq).toString(36)}`;

export async function member(ws: Workspace, opts: { active?: boolean } = {}) {
  const res = await ws.admin("POST", `/workspaces/${ws.id}/members`, {
    name: `Member ${unique()}`,
    email: `m${unique()}@example.com`,
    role: "atendente",
    ...opts,
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; active: boolean };
}

export async function pipeline(ws: Workspace, stages = ["Novo", "Qualificado", "Proposta", "Fechamento"]) {
  const res = await ws.admin("POST", `/workspaces/${ws.id}/pipelines`, {
    name: `Pipeline ${unique()}`,
    stages: stages.map((name) => ({ name })),
  });
  expect(res.status).toBe(201);
  return res.body as {
    id: string;
    name: string;
    stages: Array<{ id: string; name: string; position: number }>;
  };
}

export async function contact(ws: Workspace, extra: Record<string, unknown> = {}) {
  const res = await ws.call("POST", "/contacts", {
    name: `Contact ${unique()}`,
    email: `c${unique()}@example.com`,
    ...extra,
  });
  expect(res.status).toBe(201);
  return res.body as { id: string };
}

export async function deal(ws: Workspace, body: Record<string, unknown>, headers?: Record<string, string>) {
  const res = await ws.call("POST", "/opportunities", { title: `Deal ${unique()}`, ...body }, headers);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  // biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies freely
  return res.body as any;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
