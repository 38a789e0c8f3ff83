import { expect } from "vitest";
import type { Workspace } from "../helpers.js";
import { member } from "./crm-fixtures.js";

let seq = 0;

/** A calendar open every day around the clock in UTC unless told otherwise: any future half hour is a slot. */
export async function calendar(ws: Workspace, body: Record<string, unknown> = {}) {
  const assignees = body.assigneeUserIds ?? [(await member(ws)).id, (await member(ws)).id];
  const res = await ws.admin("POST", `/workspaces/${ws.id}/calendars`, {
    key: `cal-${Date.now().toString(36)}-${++seq}`,
    name: "Demo",
    durationMin: 30,
    dailyCap: 50,
    timezone: "UTC",
    availability: [0, 1, 2, 3, 4, 5, 6].map((weekday) => ({ weekday, start: "00:00", end: "24:00" })),
    ...body,
    assigneeUserIds: assignees,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as {
    id: string;
    key: string;
    assigneeUserIds: string[];
    dailyCap: number;
    timezone: string;
  };
}

/** A UTC instant `days` days ahead at hh:mm, as ISO. */
export function ahead(days: number, hhmm = "10:00"): string {
  const d = new Date(Date.now() + days * 86_400_000);
  return `${d.toISOString().slice(0, 10)}T${hhmm}:00.000Z`;
}

export const book = (ws: Workspace, body: Record<string, unknown>, headers?: Record<string, string>) =>
  ws.call("POST", "/appointments", body, headers);
