import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import {
  AppointmentSchema,
  AttemptSchema,
  AuditEntrySchema,
  CalendarSchema,
  ContactSchema,
  CustomFieldSchema,
  DeliverySchema,
  FunnelSchema,
  InteractionSchema,
  LearnerDetailSchema,
  LearnerSchema,
  MemberSchema,
  NoteSchema,
  OpportunitySchema,
  PipelineSchema,
  SlotSchema,
  SubscriptionSchema,
  TaskSchema,
} from "@funil/contracts";
import {
  AUDIT_ENTITIES,
  appointmentOutcome,
  appointmentStatus,
  attemptStatus,
  contactStatus,
  dealStatus,
  deliveryStatus,
  disabledReason,
  fieldEntity,
  fieldType,
  interactionActor,
  interactionDirection,
  webhookEvent,
  z,
} from "@funil/schemas";

/**
 * Response schemas are derived from the contracts, field by field, the way
 * toApiJson (packages/rpc) writes the answers: camelCase keys, every field
 * present, unset optional fields and messages as null, int64 as a number,
 * Struct as a JSON object; a field is nullable exactly when the proto declares
 * it `optional`. A field added to a proto message is in the OpenAPI document
 * at once; `narrow` only refines a field the proto types loosely (an enum
 * carried as a string).
 */
export function apiSchema(desc: DescMessage, opts: { narrow?: Record<string, z.ZodType> } = {}): z.ZodObject {
  const shape: Record<string, z.ZodType> = {};
  for (const field of desc.fields)
    shape[field.jsonName] = opts.narrow?.[field.jsonName] ?? fieldSchema(field);
  return z.object(shape);
}

function scalarSchema(type: ScalarType): z.ZodType {
  switch (type) {
    case ScalarType.BOOL:
      return z.boolean();
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return z.number();
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return z.string();
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      // Sums (the funnel's valueCents) can pass 2^53 − 1, the bound z.int() would document: found by
      // the generated tests. Past it the value is the nearest double, as any JSON number that large.
      return z.number().meta({ type: "integer" });
    default:
      return z.number().int();
  }
}

function messageSchema(message: DescMessage): z.ZodType {
  if (message.typeName === "google.protobuf.Struct") return z.record(z.string(), z.unknown());
  if (message.typeName === "google.protobuf.Value") return z.unknown();
  return apiSchema(message);
}

function fieldSchema(field: DescField): z.ZodType {
  switch (field.fieldKind) {
    case "list":
      return z.array(
        field.listKind === "message"
          ? messageSchema(field.message)
          : scalarSchema(field.scalar ?? ScalarType.STRING),
      );
    case "map":
      return z.record(
        z.string(),
        field.mapKind === "message"
          ? messageSchema(field.message)
          : scalarSchema(field.scalar ?? ScalarType.STRING),
      );
    case "enum":
      return z.string();
    default: {
      const schema =
        field.fieldKind === "message" ? messageSchema(field.message) : scalarSchema(field.scalar);
      return field.proto.proto3Optional ? schema.nullable() : schema;
    }
  }
}

/** `{data, nextCursor}` (docs/api/conventions.md §Lists and pagination). Single-page lists still type nextCursor string | null: generated clients keep it. */
export const page = <T extends z.ZodType>(item: T) =>
  z.object({ data: z.array(item), nextCursor: z.string().nullable() });

const touches = {
  firstHumanTouchAt: z.string().nullable(),
  lastHumanTouchAt: z.string().nullable(),
};

export const contact = apiSchema(ContactSchema, { narrow: { status: contactStatus } }).meta({
  id: "Contact",
});
/** The single read adds the human touches (docs/api/contacts.md §GET /contacts/{id}): never in the list. */
export const contactDetail = contact.extend(touches).meta({ id: "ContactDetail" });

/** The answer of POST /contacts/{id}/erase (docs/api/contacts.md §POST /contacts/{id}/erase). */
export const contactErasure = z
  .object({
    id: z.string().describe("the erased contact's id: every read of it is 404 from now on"),
    erasedAt: z.string().describe("when crm erased it; the data of the contact.erased event"),
    crm: z
      .object({
        notesDeleted: z.number().int().describe("the contact's notes, deleted"),
        tasksCleared: z
          .number()
          .int()
          .describe("the contact's tasks whose body was erased (title and dates stay)"),
        opportunitiesKept: z
          .number()
          .int()
          .describe(
            "the contact's deals outside the trash, kept for the funnel; their contactId names the erased contact",
          ),
      })
      .describe("what crm erased, before this answer"),
    asynchronous: z
      .array(z.enum(["timeline", "scheduling", "webhooks"]))
      .describe("the services that erase their copies once they take contact.erased from the event stream"),
  })
  .meta({ id: "ContactErasure" });
/** The data of contact.erased: the id and when, nothing personal (docs/api/events.md §Every event type). */
export const erasedContact = z.object({ id: z.string(), erasedAt: z.string() }).meta({ id: "ErasedContact" });

export const deal = apiSchema(OpportunitySchema, { narrow: { status: dealStatus } }).meta({
  id: "Opportunity",
});
/** The single read adds three fields (docs/api/deals.md §GET /opportunities/{id}): never in the list. */
export const dealDetail = deal
  .extend({ ...touches, lastActivityAt: z.string().nullable() })
  .meta({ id: "OpportunityDetail" });

export const pipeline = apiSchema(PipelineSchema).meta({ id: "Pipeline" });
export const funnel = apiSchema(FunnelSchema).meta({
  id: "Funnel",
});
export const task = apiSchema(TaskSchema).meta({ id: "Task" });
export const note = apiSchema(NoteSchema).meta({ id: "Note" });
export const customField = apiSchema(CustomFieldSchema, {
  narrow: { entity: fieldEntity, type: fieldType },
}).meta({ id: "CustomField" });
export const member = apiSchema(MemberSchema).meta({ id: "Member" });
export const calendar = apiSchema(CalendarSchema).meta({ id: "Calendar" });
export const slot = apiSchema(SlotSchema).meta({ id: "Slot" });
export const appointment = apiSchema(AppointmentSchema, {
  narrow: { status: appointmentStatus, outcome: appointmentOutcome.nullable() },
}).meta({ id: "Appointment" });
export const interaction = apiSchema(InteractionSchema, {
  narrow: { direction: interactionDirection, actor: interactionActor },
}).meta({ id: "Interaction" });

export const webhook = apiSchema(SubscriptionSchema, {
  narrow: { events: z.array(webhookEvent), disabledReason: disabledReason.nullable() },
}).meta({ id: "WebhookSubscription" });
export const webhookCreated = z
  .object({ subscription: webhook, secret: z.string().describe("whsec_…: shown only in this answer") })
  .meta({ id: "WebhookCreated" });
export const webhookSecret = z
  .object({ secret: z.string().describe("the new whsec_…; the old one keeps signing for 24 h") })
  .meta({ id: "WebhookSecret" });
export const delivery = apiSchema(DeliverySchema, {
  narrow: { status: deliveryStatus, event: webhookEvent },
}).meta({ id: "WebhookDelivery" });
export const webhookAttempt = apiSchema(AttemptSchema, {
  narrow: { status: attemptStatus, event: webhookEvent },
}).meta({ id: "WebhookAttempt" });
export const eventType = z
  .object({
    type: webhookEvent,
    description: z.string().describe("when it is emitted"),
    scope: z.string().describe("the read scope a subscription to it needs, besides webhooks.manage"),
    schema: z.record(z.string(), z.unknown()).describe("JSON Schema (2020-12) of a delivery's body"),
  })
  .meta({ id: "WebhookEventType" });
export const webhookRecovered = z
  .object({
    queued: z
      .number()
      .int()
      .describe("dead deliveries of the window put back, each with a new series of attempts"),
    notQueued: z
      .number()
      .int()
      .describe(
        "dead deliveries of the window left over the bound of one call (10 000): recover again from nextSince",
      ),
    nextSince: z.string().nullable().describe("where the next call starts; null when nothing was left"),
  })
  .meta({ id: "WebhookRecovered" });

export const learner = apiSchema(LearnerSchema).meta({ id: "Learner" });
export const learnerDetail = apiSchema(LearnerDetailSchema).meta({ id: "LearnerDetail" });

/** Who made a change (docs/api/events.md §Who made a change): `id` is the API key's when `type` is key. */
const auditActor = z
  .object({ type: z.enum(["key", "admin", "system"]), id: z.string().nullable() })
  .meta({ id: "AuditActor" });
export const auditEntry = apiSchema(AuditEntrySchema, {
  narrow: { entity: z.enum(AUDIT_ENTITIES), actor: auditActor },
}).meta({ id: "AuditEntry" });
