import {
  ContactFieldsSchema,
  CreateNoteRequestSchema,
  OpportunityFieldsSchema,
  OpportunityInputSchema,
  SERVICES,
  TaskFieldsSchema,
} from "@funil/contracts";
import { clientsOf, describeError, messageOf } from "@funil/rpc";
import type { z } from "@funil/schemas";
import { beforeAll, describe, expect, inject, it } from "vitest";
import * as responses from "../../services/gateway/src/schemas/responses.js";
import { newWorkspace, type Workspace } from "../helpers.js";
import { contact, deal, member, pipeline } from "./crm-fixtures.js";

/**
 * Each field rule has one owner (docs/architecture.md §Style): the same input gets the same
 * answer over HTTP (through the gateway) and over gRPC (straight into crm),
 * with the same validation_failed details. The inputs are the drift cases
 * found in review and every text limit of docs/api.
 */
let ws: Workspace;
let ids: { contact: string; deal: string; pipeline: string; member: string; task: string };
const crm = () => clientsOf(SERVICES.crm, inject("crmUrl"), 5000);

beforeAll(async () => {
  ws = await newWorkspace();
  const [pl, ct, m] = [await pipeline(ws), await contact(ws), await member(ws)];
  const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
  const task = await ws.call("POST", "/tasks", { title: "t" });
  ids = { contact: ct.id, deal: d.id, pipeline: pl.id, member: m.id, task: task.body.id };
});

const x = (n: number) => "x".repeat(n);

type Body = Record<string, unknown>;
type Case = [
  label: string,
  method: "POST" | "PATCH",
  path: () => string,
  body: Body | (() => Body),
  grpc: (body: Body) => Promise<unknown>,
];

const upsert = (body: Record<string, unknown>) =>
  crm().contacts.upsertContact({ workspaceId: ws.id, fields: messageOf(ContactFieldsSchema, body) });
const patchContact = (body: Record<string, unknown>) =>
  crm().contacts.updateContact({
    workspaceId: ws.id,
    id: ids.contact,
    fields: messageOf(ContactFieldsSchema, body),
  });
const createDeal = (body: Record<string, unknown>) =>
  crm().opportunities.createOpportunity({
    workspaceId: ws.id,
    input: messageOf(OpportunityInputSchema, body),
  });
const patchDeal = (body: Record<string, unknown>) =>
  crm().opportunities.updateOpportunity({
    workspaceId: ws.id,
    id: ids.deal,
    fields: messageOf(OpportunityFieldsSchema, body),
  });
const createTask = (body: Record<string, unknown>) =>
  crm().tasks.createTask({ workspaceId: ws.id, fields: messageOf(TaskFieldsSchema, body) });
const patchTask = (body: Record<string, unknown>) =>
  crm().tasks.updateTask({ workspaceId: ws.id, id: ids.task, fields: messageOf(TaskFieldsSchema, body) });
const createNote = (body: Record<string, unknown>) =>
  crm().notes.createNote({
    ...messageOf(CreateNoteRequestSchema, { contactId: ids.contact, userId: ids.member, ...body }),
    workspaceId: ws.id,
  });

const contacts = (label: string, body: Record<string, unknown>): Case[] => [
  [`POST /contacts ${label}`, "POST", () => "/contacts", { phone: "5511999990000", ...body }, upsert],
  [`PATCH /contacts ${label}`, "PATCH", () => `/contacts/${ids.contact}`, body, patchContact],
];
const deals = (label: string, body: Record<string, unknown>): Case[] => [
  [
    `POST /opportunities ${label}`,
    "POST",
    () => "/opportunities",
    () => ({ contactId: ids.contact, pipelineId: ids.pipeline, title: "t", ...body }),
    createDeal,
  ],
];

const CASES: Case[] = [
  // Limits the HTTP schemas and crm's own checks could disagree on.
  ...contacts("name of 5000 characters", { name: x(5000) }),
  ...deals("source of 300 characters", { source: x(300) }),
  ...deals("origin of 201 characters", { origin: x(201) }),
  ...deals("temperature of 61 characters", { temperature: x(61) }),
  ...deals("expectedCloseAt without an offset", { expectedCloseAt: "2026-12-01" }),
  ...deals("title of spaces", { title: "   " }),
  ...deals("stageId of 201 characters", { stageId: x(201) }),
  [
    "PATCH /opportunities title of spaces",
    "PATCH",
    () => `/opportunities/${ids.deal}`,
    { title: "  " },
    patchDeal,
  ],
  [
    "PATCH /opportunities lossReason of 2001",
    "PATCH",
    () => `/opportunities/${ids.deal}`,
    { lossReason: x(2001) },
    patchDeal,
  ],
  [
    "PATCH /opportunities valueCents below 0",
    "PATCH",
    () => `/opportunities/${ids.deal}`,
    { valueCents: -1 },
    patchDeal,
  ],
  [
    "PATCH /opportunities currency of two letters",
    "PATCH",
    () => `/opportunities/${ids.deal}`,
    { currency: "US" },
    patchDeal,
  ],
  [
    "PATCH /opportunities status pending",
    "PATCH",
    () => `/opportunities/${ids.deal}`,
    { status: "pending" },
    patchDeal,
  ],
  // Every text limit of docs/api.
  ...contacts("company of 201", { company: x(201) }),
  ...contacts("role of 201", { role: x(201) }),
  ...contacts("notes of 10001", { notes: x(10_001) }),
  ...contacts("url of 2049", { url: x(2049) }),
  ...contacts("a tag of 61", { tags: [x(61)] }),
  ...contacts("101 tags", { tags: Array.from({ length: 101 }, (_, i) => `t${i}`) }),
  ...contacts("101 customFields keys", {
    customFields: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, 1])),
  }),
  ...contacts("customFields over 32 KiB", { customFields: { big: x(33_000) } }),
  ...contacts("phone of 2 digits", { phone: "12" }),
  ...contacts("phone of 21 digits", { phone: "1".repeat(21) }),
  ...contacts("email without @", { email: "nope" }),
  ...contacts("utm.source of 201", { utm: { source: x(201) } }),
  ...contacts("a NUL character", { name: "a\u0000b" }),
  ["POST /tasks title of spaces", "POST", () => "/tasks", { title: " " }, createTask],
  ["POST /tasks title of 501", "POST", () => "/tasks", { title: x(501) }, createTask],
  [
    "POST /tasks dueAt that is no timestamp",
    "POST",
    () => "/tasks",
    { title: "t", dueAt: "tomorrow" },
    createTask,
  ],
  ["PATCH /tasks body of 10001", "PATCH", () => `/tasks/${ids.task}`, { body: x(10_001) }, patchTask],
  [
    "POST /notes body of spaces",
    "POST",
    () => "/notes",
    () => ({ contactId: ids.contact, userId: ids.member, body: "  " }),
    createNote,
  ],
  [
    "POST /notes body of 10001",
    "POST",
    () => "/notes",
    () => ({ contactId: ids.contact, userId: ids.member, body: x(10_001) }),
    createNote,
  ],
];

describe("docs/architecture.md §Style: HTTP and gRPC give the same answer for the same input", () => {
  it.each(CASES)("%s", async (_label, method, path, given, grpc) => {
    const body = typeof given === "function" ? given() : given;
    const http = await ws.call(method, path(), body);
    const direct = await grpc(body).then(
      () => undefined,
      (err: unknown) => describeError(err),
    );
    expect(http.status, JSON.stringify(http.body)).toBe(400);
    expect(direct).toBeDefined();
    expect({
      status: direct!.status,
      error: { code: direct!.code, message: direct!.message, details: direct!.details },
    }).toEqual({
      status: http.status,
      error: http.body.error,
    });
  });
});

describe("docs/architecture.md §Style: the response schemas (and so the OpenAPI document) are the answers' shapes", () => {
  it("every kind of crm answer parses, strictly, with the schema derived from its contract", async () => {
    const answers: Array<[z.ZodObject, unknown]> = [
      [responses.contactDetail, (await ws.call("GET", `/contacts/${ids.contact}`)).body],
      [responses.contact, (await ws.call("GET", "/contacts")).body.data[0]],
      [responses.dealDetail, (await ws.call("GET", `/opportunities/${ids.deal}`)).body],
      [responses.deal, (await ws.call("PATCH", `/opportunities/${ids.deal}`, { status: "won" })).body],
      [responses.pipeline, (await ws.call("GET", "/pipelines")).body.data[0]],
      [responses.funnel, (await ws.call("GET", "/funnel")).body],
      [responses.task, (await ws.call("GET", "/tasks")).body.data[0]],
      [responses.member, (await ws.call("GET", "/members")).body.data[0]],
      [
        responses.note,
        (await ws.call("POST", "/notes", { contactId: ids.contact, userId: ids.member, body: "hi" })).body,
      ],
    ];
    for (const [schema, body] of answers) {
      expect(body).toBeDefined();
      expect(() => schema.strict().parse(body), JSON.stringify(body)).not.toThrow();
    }
  });
});
