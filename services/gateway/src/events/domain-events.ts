import { z } from "@funil/schemas";
import { apiKeyChange, workspace } from "../schemas/admin.js";
import { calendar, customField, deal, member, note, pipeline, task, webhook } from "../schemas/responses.js";
import { deliveryPayload, EVENT_CATALOG } from "./catalog.js";

export interface DomainEvent {
  type: string;
  /** When it is emitted (docs/api/events.md §Every event type). */
  description: string;
  /** The read scope a webhook subscription to it needs; undefined: not subscribable. */
  scope: string | undefined;
  /** Its `data`: the resource as the API's single read returns it. */
  data: z.ZodType;
}

/** The events only the services consume: not in the webhooks catalog. */
const INTERNAL: Array<Omit<DomainEvent, "scope">> = [
  {
    type: "opportunity.updated",
    description: "any real change of a deal by PATCH (emitted before stage_changed, won or lost)",
    data: deal,
  },
  { type: "opportunity.trashed", description: "DELETE /opportunities/{id}", data: deal },
  { type: "opportunity.restored", description: "POST /opportunities/{id}/restore", data: deal },
  { type: "task.created", description: "POST /tasks", data: task },
  { type: "task.updated", description: "a PATCH that changed a task", data: task },
  { type: "note.created", description: "POST /notes", data: note },
  { type: "pipeline.created", description: "a pipeline is created (admin API)", data: pipeline },
  { type: "member.created", description: "a member is added (admin API)", data: member },
  { type: "member.updated", description: "a member is changed or deactivated (admin API)", data: member },
  { type: "custom_field.created", description: "a custom field is defined (admin API)", data: customField },
  { type: "calendar.created", description: "a calendar is created (admin API)", data: calendar },
  { type: "workspace.created", description: "a workspace is created (admin API)", data: workspace },
  {
    type: "workspace.updated",
    description: "a workspace is renamed or its operator flag changed (admin API)",
    data: workspace,
  },
  {
    type: "api_key.created",
    description: "an API key is created (admin API; the key as listed, never its secret or hash)",
    data: apiKeyChange,
  },
  {
    type: "api_key.updated",
    description: "an API key's scopes are replaced (admin API)",
    data: apiKeyChange,
  },
  { type: "api_key.revoked", description: "an API key is revoked (admin API)", data: apiKeyChange },
  {
    type: "webhook.created",
    description: "POST /webhooks (the subscription, never its secret)",
    data: webhook,
  },
  {
    type: "webhook.updated",
    description: "a PATCH that changed a webhook subscription, or the sender deactivating it",
    data: webhook,
  },
  {
    type: "webhook.deleted",
    description: "DELETE /webhooks/{id} (the subscription as it was)",
    data: webhook,
  },
  {
    type: "webhook.resent",
    description:
      "POST /webhooks/{id}/deliveries/{deliveryId}/resend or POST /webhooks/{id}/recover put deliveries back in line (the subscription's id and the deliveries' ids)",
    data: z.object({ id: z.string(), deliveryIds: z.array(z.string()) }),
  },
  {
    type: "webhook.secret_rotated",
    description: "POST /webhooks/{id}/rotate-secret (changes: secret; the secret is never in the event)",
    data: webhook,
  },
];

/**
 * Every event type the services publish on EVENTS (docs/api/events.md §Every event type), ordered by
 * type: the subscribable ones as the webhooks catalog has them (a type added there is here at once),
 * then the internal ones.
 */
export const DOMAIN_EVENTS: DomainEvent[] = [
  ...EVENT_CATALOG.map(({ type, description, scope }) => ({
    type,
    description,
    scope,
    data: deliveryPayload(type).shape.data,
  })),
  ...INTERNAL.map((e) => ({ ...e, scope: undefined })),
].sort((a, b) => a.type.localeCompare(b.type));
