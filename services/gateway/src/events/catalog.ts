import { WEBHOOK_EVENTS, type WebhookEvent, z } from "@funil/schemas";
import { appointment, contact, deal } from "../schemas/responses.js";

/**
 * The event catalog (docs/api/webhooks.md §Event catalog): every
 * subscribable event, when it is emitted, the read scope a subscription to it
 * needs, and the JSON Schema of the body its deliveries carry. The resource
 * schemas are the API's own (responses.ts), derived from the proto messages
 * that the services write each event's `data` with (their wire's `json`), so
 * a field added to a resource is in the catalog at once.
 */
const EVENTS: Record<WebhookEvent, { description: string; data: z.ZodType }> = {
  "contact.created": { description: "a contact is created (an upsert that found nobody)", data: contact },
  "contact.updated": {
    description:
      "any real change of a contact: an upsert that changed something, a PATCH, archive, unarchive",
    data: contact,
  },
  "opportunity.created": { description: "a deal is created", data: deal },
  "opportunity.stage_changed": { description: "a PATCH moved the deal to another stage", data: deal },
  "opportunity.won": { description: "a PATCH set status won on a deal that was not won", data: deal },
  "opportunity.lost": { description: "a PATCH set status lost on a deal that was not lost", data: deal },
  "meeting.booked": { description: "POST /appointments created a meeting", data: appointment },
  "meeting.rescheduled": {
    description: "a reschedule moved a meeting to another time or assignee",
    data: appointment,
  },
  "meeting.canceled": { description: "a scheduled meeting was canceled", data: appointment },
  "meeting.outcome": { description: "an outcome was recorded", data: appointment },
};

/** The body of a delivery of `type` (docs/api/webhooks.md §What a receiver gets). */
export function deliveryPayload(type: WebhookEvent) {
  return z
    .object({
      id: z.string().describe("the event's id, the same at every attempt, resend and recover"),
      type: z.literal(type),
      createdAt: z.string().describe("when the event occurred"),
      workspaceId: z.string(),
      data: EVENTS[type].data,
    })
    .describe(EVENTS[type].description);
}

/**
 * An item of GET /events (docs/api/events.md §Catch-up: GET /events): the body a delivery of its type
 * carries, told apart by `type`.
 */
export const domainEvent = z
  .discriminatedUnion(
    "type",
    (Object.keys(WEBHOOK_EVENTS) as WebhookEvent[]).map(deliveryPayload) as unknown as [
      ReturnType<typeof deliveryPayload>,
      ...ReturnType<typeof deliveryPayload>[],
    ],
  )
  .meta({ id: "Event" });

export interface EventType {
  type: WebhookEvent;
  description: string;
  scope: string;
  /** JSON Schema (2020-12) of a delivery's body. */
  schema: Record<string, unknown>;
}

const jsonSchema = (s: z.ZodType) =>
  z.toJSONSchema(s, { target: "draft-2020-12", io: "output", unrepresentable: "any" }) as Record<
    string,
    unknown
  >;

/** Every subscribable event, in the order of WEBHOOK_EVENTS, built once. */
export const EVENT_CATALOG: EventType[] = (Object.keys(WEBHOOK_EVENTS) as WebhookEvent[]).map((type) => ({
  type,
  description: EVENTS[type].description,
  scope: WEBHOOK_EVENTS[type],
  schema: jsonSchema(deliveryPayload(type)),
}));

const header = (description: string) => ({ required: true, description, schema: { type: "string" } });

/**
 * The OpenAPI 3.1 `webhooks` of the document: one POST per subscribable
 * event, as a receiver gets it (docs/api/webhooks.md §What a receiver gets),
 * its `data` a reference to the resource's component schema.
 */
export function openapiWebhooks(): Record<string, unknown> {
  const hooks: Record<string, unknown> = {};
  for (const { type, description, scope } of EVENT_CATALOG) {
    const resource = EVENTS[type].data.meta()?.id;
    hooks[type] = {
      post: {
        operationId: `webhook${type.replace(/(^|[._])([a-z])/g, (_, __, c: string) => c.toUpperCase())}`,
        summary: `${type}: ${description}`,
        description: `Sent to each active subscription to ${type} of the workspace (its key needs ${scope}).`,
        tags: ["webhooks"],
        security: [],
        parameters: [
          {
            in: "header",
            name: "x-funil-signature",
            ...header(
              "t=<unix seconds>,v1=<hex HMAC-SHA256 of t, a dot and the raw body>, one v1 per signing secret",
            ),
          },
          { in: "header", name: "x-funil-event", ...header("the event type") },
          { in: "header", name: "x-funil-delivery", ...header("the delivery's id: deduplicate on it") },
        ],
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["id", "type", "createdAt", "workspaceId", "data"],
                properties: {
                  id: { type: "string", description: "the event's id, the same at every attempt" },
                  type: { type: "string", const: type },
                  createdAt: { type: "string", description: "when the event occurred" },
                  workspaceId: { type: "string" },
                  data: { $ref: `#/components/schemas/${resource}` },
                },
              },
            },
          },
        },
        responses: {
          "200": { description: "any 2xx delivers; anything else (3xx included) is retried" },
        },
      },
    };
  }
  return hooks;
}
