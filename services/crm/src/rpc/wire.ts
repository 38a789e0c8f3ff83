import { create, type JsonObject } from "@bufbuild/protobuf";
import {
  type Contact,
  ContactSchema,
  CustomFieldSchema,
  EraseContactResponseSchema,
  FunnelSchema,
  MemberSchema,
  NoteSchema,
  type Opportunity,
  OpportunitySchema,
  PipelineSchema,
  TaskSchema,
  type Utm,
} from "@funil/contracts";
import { wireOf } from "@funil/rpc";
import { isoString } from "@funil/schemas";
import type { ContactRecord } from "../contacts.js";
import type { DealRecord } from "../deals.js";
import type { FunnelSummary, Tally } from "../funnel.js";
import type { ErasureRecord } from "../store/contacts.js";
import type { CustomFieldRecord } from "../store/custom-fields.js";
import type { MemberRecord } from "../store/members.js";
import type { NoteRecord } from "../store/notes.js";
import type { PipelineRecord } from "../store/pipelines.js";
import type { TaskRecord } from "../tasks.js";

/**
 * Records as the contracts' messages: the one place that knows both. Each
 * `…Wire` gives a record's message and its API JSON, computed at most once
 * per record, so a write's reply, its event and a remembered Idempotency-Key
 * result share one encoding.
 */

/** A record's null is an unset optional field on the wire (the API shows it as null again). */
const absent = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

/**
 * The two messages of the list pages are written as literals, not through
 * create(): create() walks the descriptor for every field, which shows in
 * crm's profile of a page of 50 (bench/RESULTS.md), and a literal with its $typeName is the
 * same message to every encoder (an unset optional field is undefined).
 */
const utm = (u: ContactRecord["utm"]): Utm => ({ $typeName: "funil.crm.v1.Utm", ...u });

export const contactWire = wireOf(
  ContactSchema,
  (r: ContactRecord): Contact => ({
    $typeName: "funil.crm.v1.Contact",
    id: r.id,
    name: absent(r.name),
    phone: absent(r.phone),
    email: absent(r.email),
    company: absent(r.company),
    companyId: absent(r.companyId),
    role: absent(r.role),
    cpf: absent(r.cpf),
    notes: absent(r.notes),
    tags: r.tags,
    status: r.status,
    ownerUserId: absent(r.ownerUserId),
    origin: absent(r.origin),
    customFields: r.customFields as JsonObject,
    createdAt: isoString(r.createdAt),
    updatedAt: isoString(r.updatedAt),
    url: absent(r.url),
    utm: utm(r.utm),
  }),
);

export const dealWire = wireOf(
  OpportunitySchema,
  (r: DealRecord): Opportunity => ({
    $typeName: "funil.crm.v1.Opportunity",
    id: r.id,
    title: r.title,
    pipelineId: r.pipelineId,
    stageId: r.stageId,
    contactId: r.contactId,
    status: r.status,
    valueCents: BigInt(r.valueCents),
    currency: r.currency,
    ownerUserId: absent(r.ownerUserId),
    temperature: absent(r.temperature),
    tags: r.tags,
    lossReason: absent(r.lossReason),
    expectedCloseAt: isoString(r.expectedCloseAt),
    wonAt: isoString(r.wonAt),
    lostAt: isoString(r.lostAt),
    customFields: r.customFields as JsonObject,
    createdAt: isoString(r.createdAt),
    updatedAt: isoString(r.updatedAt),
    source: absent(r.source),
    utm: utm(r.utm),
    origin: absent(r.origin),
    stageChangedAt: isoString(r.stageChangedAt),
    url: absent(r.url),
  }),
);

export const pipelineWire = wireOf(PipelineSchema, (p: PipelineRecord) =>
  create(PipelineSchema, { id: p.id, name: p.name, stages: p.stages }),
);

export const taskWire = wireOf(TaskSchema, (t: TaskRecord) =>
  create(TaskSchema, {
    id: t.id,
    contactId: absent(t.contactId),
    opportunityId: absent(t.opportunityId),
    title: t.title,
    body: absent(t.body),
    assigneeUserId: absent(t.assigneeUserId),
    dueAt: isoString(t.dueAt),
    completedAt: isoString(t.completedAt),
    createdAt: isoString(t.createdAt),
    updatedAt: isoString(t.updatedAt),
  }),
);

export const noteWire = wireOf(NoteSchema, (n: NoteRecord) =>
  create(NoteSchema, {
    id: n.id,
    contactId: n.contactId,
    opportunityId: absent(n.opportunityId),
    body: n.body,
    userId: n.userId,
    createdAt: isoString(n.createdAt),
  }),
);

/** The data of contact.erased (docs/api/events.md §Every event type): the contact's id and when, nothing personal. */
export const erasureJson = (e: ErasureRecord) => ({ id: e.id, erasedAt: isoString(e.erasedAt) });

export const erasureToProto = (e: ErasureRecord) =>
  create(EraseContactResponseSchema, {
    id: e.id,
    erasedAt: isoString(e.erasedAt),
    notesDeleted: e.notesDeleted,
    tasksCleared: e.tasksCleared,
    opportunitiesKept: e.opportunitiesKept,
  });

export const customFieldWire = wireOf(CustomFieldSchema, (r: CustomFieldRecord) =>
  create(CustomFieldSchema, { ...r, createdAt: isoString(r.createdAt) }),
);
export const memberWire = wireOf(MemberSchema, (r: MemberRecord) =>
  create(MemberSchema, {
    id: r.id,
    name: r.name,
    email: r.email,
    role: r.role,
    active: r.active,
    createdAt: isoString(r.createdAt),
  }),
);

const tally = (t: Tally) => ({ count: BigInt(t.count), valueCents: BigInt(t.valueCents) });

export const funnelToProto = (s: FunnelSummary) =>
  create(FunnelSchema, {
    from: absent(s.from),
    to: absent(s.to),
    pipelineId: absent(s.pipelineId),
    total: tally(s.total),
    byStage: s.byStage.map((stage) => ({ stageId: stage.stageId, name: stage.name, ...tally(stage) })),
    byStatus: { open: tally(s.byStatus.open), won: tally(s.byStatus.won), lost: tally(s.byStatus.lost) },
    closedInRange: { won: tally(s.closedInRange.won), lost: tally(s.closedInRange.lost) },
  });
