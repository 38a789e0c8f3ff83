import {
  CONSUMER_DEFAULTS,
  CONSUMERS,
  type ConsumerName,
  DUPLICATE_WINDOW_MS,
  STREAMS,
  type StreamName,
} from "@funil/bus";
import { naming } from "@funil/config";
import { streamMaxAges } from "@funil/rpc";
import {
  INGEST_MESSAGES,
  ingestDeadLetter,
  ingestDeadSubject,
  PLATFORM_DEAD_LETTER,
  PLATFORM_MESSAGES,
  platformDeadLetter,
  z,
} from "@funil/schemas";
import { gatewayConfig } from "./config.js";
import { DOMAIN_EVENTS } from "./events/domain-events.js";

type Json = Record<string, unknown>;

/** The setting that sets each stream's max_age (docs/operations.md §Retention). */
export const STREAM_MAX_AGE_SETTINGS: Record<StreamName, string> = {
  EVENTS: "EVENTS_MAX_AGE_MS",
  INGEST: "INGEST_MAX_AGE_MS",
  PLATFORM: "PLATFORM_MAX_AGE_MS",
  WEBHOOK_DELIVERIES: "WEBHOOK_JOBS_MAX_AGE_MS",
};

/** One subject (or family of subjects, with a parameter) of a stream, and the message it carries. */
interface Subject {
  id: string;
  address: string;
  parameters?: Record<string, Json>;
  stream: StreamName;
  title: string;
  description: string;
  /** Who publishes on it. */
  publisher: string;
  payload: Json;
  headers: Json;
}

const TRACEPARENT = {
  type: "string",
  pattern: "^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$",
  description:
    "W3C trace context of the work that made the message, set when it was traced; consumers continue the trace",
};
const TRACESTATE = {
  type: "string",
  description: "W3C tracestate, read with traceparent when a producer sets it (Funil's publishers do not)",
};

function headers(msgId: Json, required: boolean): Json {
  return {
    type: "object",
    properties: {
      "Nats-Msg-Id": { type: "string", ...msgId },
      traceparent: TRACEPARENT,
      tracestate: TRACESTATE,
    },
    ...(required ? { required: ["Nats-Msg-Id"] } : {}),
  };
}

/** Headers of what another system publishes: a message id is optional, and drops a repeat in the window. */
const OUTSIDE_HEADERS = headers(
  {
    description:
      "optional: a republish with the same id inside the stream's duplicate window is dropped; the consumers' inbox is keyed by it",
  },
  false,
);

/**
 * A zod schema as the JSON Schema (draft-07, the base of AsyncAPI's schema format) of the JSON on the
 * wire: `input` for what producers outside write (before the consumers' transforms), `output` for
 * what the services write. Named schemas (`.meta({id})`, the API's resources) go to `shared`, referenced
 * from components.schemas as in the OpenAPI document.
 */
function jsonSchema(schema: z.ZodType, io: "input" | "output", shared: Record<string, Json>): Json {
  const {
    $schema: _,
    definitions,
    ...rest
  } = z.toJSONSchema(schema, {
    target: "draft-7",
    io,
    unrepresentable: "any",
  }) as Json & { definitions?: Record<string, Json> };
  const relink = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(relink)
      : v && typeof v === "object"
        ? Object.fromEntries(
            Object.entries(v).map(([k, x]) => [
              k,
              k === "$ref" && typeof x === "string"
                ? x.replace("#/definitions/", "#/components/schemas/")
                : relink(x),
            ]),
          )
        : v;
  for (const [name, def] of Object.entries(definitions ?? {})) shared[name] = relink(def) as Json;
  return relink(rest) as Json;
}

function eventSubjects(shared: Record<string, Json>): Subject[] {
  return DOMAIN_EVENTS.map(({ type, description, scope, data }) => {
    const envelope = z.object({
      id: z.string().describe("the event's id (evt_…), also the message's Nats-Msg-Id"),
      type: z.literal(type),
      workspaceId: z.string(),
      occurredAt: z.iso
        .datetime()
        .describe("the time of the change (the resource's updatedAt, or createdAt)"),
      data,
      actor: z
        .object({ type: z.enum(["key", "admin", "system"]), id: z.string().optional() })
        .describe("who made the change: an API key (its id), the admin API, or the system itself"),
      requestId: z
        .string()
        .nullable()
        .describe("the gateway's x-request-id of the request that made the change; null for the system's"),
      changes: z
        .array(z.string())
        .describe("the names of the fields the change set (a create) or changed, never their values"),
    });
    return {
      id: `events.${type}`,
      address: `events.${type}`,
      stream: "EVENTS",
      title: type,
      description: `${description}. ${scope ? `Subscribable by webhooks (scope ${scope}).` : "Not subscribable by webhooks."}`,
      publisher:
        "the outbox relay of the process that made the change (the gateway for workspaces and API keys), after its transaction committed",
      payload: jsonSchema(envelope, "output", shared),
      headers: headers({ description: "the event's id: a republished event is dropped by the stream" }, true),
    };
  });
}

function ingestSubjects(shared: Record<string, Json>): Subject[] {
  const subjects = Object.keys(INGEST_MESSAGES) as Array<keyof typeof INGEST_MESSAGES>;
  return [
    ...subjects.map(
      (subject): Subject => ({
        id: subject,
        address: subject,
        stream: "INGEST",
        title: subject,
        description: `${INGEST_MESSAGES[subject].description}. Unknown fields are ignored (docs/api/interactions.md §Ingest).`,
        publisher: "the inbox, telephony and e-mail systems",
        payload: jsonSchema(INGEST_MESSAGES[subject], "input", shared),
        headers: OUTSIDE_HEADERS,
      }),
    ),
    {
      id: "ingest.dead",
      address: ingestDeadSubject("{subject}"),
      parameters: { subject: { enum: subjects, description: "the subject of the refused message" } },
      stream: "INGEST",
      title: "ingest dead letters",
      description: `${ingestDeadLetter.description}: a message that is not JSON or breaks the contract. Consumed by nobody.`,
      publisher: "the timeline",
      payload: jsonSchema(ingestDeadLetter, "output", shared),
      headers: headers({ description: "dead:<stream>:<sequence of the refused message>" }, true),
    },
  ];
}

function platformSubjects(shared: Record<string, Json>): Subject[] {
  const subjects = Object.keys(PLATFORM_MESSAGES) as Array<keyof typeof PLATFORM_MESSAGES>;
  return [
    ...subjects.map(
      (subject): Subject => ({
        id: subject,
        address: subject,
        stream: "PLATFORM",
        title: subject,
        description:
          "the data of the message, applied once (docs/api/learners.md §Ingest). Unknown fields are ignored.",
        publisher: "the e-learning platform",
        payload: jsonSchema(PLATFORM_MESSAGES[subject], "input", shared),
        headers: OUTSIDE_HEADERS,
      }),
    ),
    {
      id: PLATFORM_DEAD_LETTER,
      address: PLATFORM_DEAD_LETTER,
      stream: "PLATFORM",
      title: "platform dead letters",
      description: `${platformDeadLetter.description}: a message that fails its schema.`,
      publisher: "the learning service",
      payload: jsonSchema(platformDeadLetter, "output", shared),
      headers: headers({ description: "dead:<the refused message's id>" }, true),
    },
  ];
}

/** A job of the webhooks service (internal: its own work queue, not a public interface). */
const webhookJob = z.object({
  job: z.string().describe("the job's id (job_…), also the message's Nats-Msg-Id"),
  deliveryIds: z.array(z.string()).min(1).describe("the deliveries of one subscription this job sends"),
});

function webhookSubjects(shared: Record<string, Json>): Subject[] {
  return [
    {
      id: "webhook.deliveries",
      address: "webhook.deliveries.{subscriptionId}",
      parameters: { subscriptionId: { description: "the subscription whose deliveries the job holds" } },
      stream: "WEBHOOK_DELIVERIES",
      title: "webhook delivery jobs",
      description:
        "Internal to the webhooks service, not a public interface: the deliveries to send, retried with delayed redelivery",
      publisher: "the webhooks service's outbox relay (fan-out, resend, recover)",
      payload: jsonSchema(webhookJob, "output", shared),
      headers: headers({ description: "the job's id" }, true),
    },
  ];
}

/** Whether a NATS subject matches a filter (`*` one token, `>` the rest); `{param}` stands for any tokens. */
export function subjectMatches(filter: string, subject: string): boolean {
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return s.length > i;
    if (i >= s.length) return false;
    if (f[i] !== "*" && f[i] !== s[i] && !/^\{.+\}$/.test(s[i]!)) return false;
  }
  return f.length === s.length;
}

/** Every setting at its default: the document shows the defaults, whatever the serving process runs with. */
const defaults = () => gatewayConfig.parse({});

function jetstream() {
  const example = naming("test");
  const maxAges = streamMaxAges(defaults());
  const streams = Object.fromEntries(
    (Object.keys(STREAMS) as StreamName[]).map((name) => [
      name,
      {
        subjects: STREAMS[name].subjects,
        storage: "file",
        max_age_ms: maxAges[name],
        max_age_setting: STREAM_MAX_AGE_SETTINGS[name],
        duplicate_window_ms: Math.min(DUPLICATE_WINDOW_MS, maxAges[name]),
        num_replicas_setting: "NATS_STREAM_REPLICAS",
      },
    ]),
  );
  const consumers = Object.fromEntries(
    (Object.keys(CONSUMERS) as ConsumerName[]).map((durable) => {
      const c: (typeof CONSUMERS)[ConsumerName] & { ackWaitMs?: number; maxAckPending?: number } =
        CONSUMERS[durable];
      return [
        durable,
        {
          service: c.service,
          description: c.description,
          stream: c.stream,
          durable_name: durable,
          filter_subject: c.filterSubject,
          deliver: "pull",
          ack_policy: "explicit",
          ack_wait_ms: c.ackWaitMs ?? CONSUMER_DEFAULTS.ackWaitMs,
          max_deliver: CONSUMER_DEFAULTS.maxDeliver,
          ...(c.maxAckPending === undefined ? {} : { max_ack_pending: c.maxAckPending }),
        },
      ];
    }),
  );
  return {
    naming: {
      description:
        "Under FUNIL_ENV (a test or side-by-side stack) every stream name gets the upper-cased value and _ in front, every subject the value and a dot; without it the names are as written here",
      stream: "<FUNIL_ENV upper-cased>_<stream>",
      subject: "<FUNIL_ENV>.<subject>",
      example: {
        FUNIL_ENV: "test",
        stream: example.stream("EVENTS"),
        subject: example.subject("events.contact.created"),
      },
    },
    streams,
    consumers,
  };
}

const componentId = (id: string) => id.replace(/[^\w.-]/g, "_");

function channelsAndOperations(subjects: Subject[]) {
  const channels: Json = {};
  const messages: Json = {};
  const operations: Json = {};
  for (const s of subjects) {
    const id = componentId(s.id);
    messages[id] = {
      name: id,
      title: s.title,
      contentType: "application/json",
      headers: s.headers,
      payload: s.payload,
    };
    channels[id] = {
      address: s.address,
      title: s.title,
      description: `${s.description}\n\nStream ${s.stream}; published by ${s.publisher}.`,
      ...(s.parameters ? { parameters: s.parameters } : {}),
      messages: { [id]: { $ref: `#/components/messages/${id}` } },
      "x-stream": s.stream,
    };
    const message = [{ $ref: `#/channels/${id}/messages/${id}` }];
    operations[`send.${id}`] = {
      action: "send",
      channel: { $ref: `#/channels/${id}` },
      summary: `${s.title}, published by ${s.publisher}`,
      messages: message,
    };
    for (const [durable, c] of Object.entries(CONSUMERS) as Array<
      [ConsumerName, (typeof CONSUMERS)[ConsumerName]]
    >)
      if (c.stream === s.stream && subjectMatches(c.filterSubject, s.address))
        operations[`${durable}.${id}`] = {
          action: "receive",
          channel: { $ref: `#/channels/${id}` },
          summary: `${c.service}'s durable consumer ${durable}: ${c.description}`,
          messages: message,
          "x-consumer": durable,
        };
  }
  return { channels, messages, operations };
}

const DESCRIPTION = `Every NATS JetStream subject Funil's services publish or consume: the domain events (EVENTS), \
what the inbox, telephony and e-mail systems send the timeline (INGEST), the e-learning platform's data (PLATFORM) \
and the webhooks service's internal jobs (WEBHOOK_DELIVERIES). Each message is JSON.

Subjects: the channel addresses are the names without an environment. Under FUNIL_ENV every subject is prefixed \
with its value and a dot, every stream with its upper-cased value and an underscore (FUNIL_ENV=test: \
TEST_EVENTS, test.events.contact.created); x-jetstream.naming says the same.

Streams and consumers: x-jetstream.streams holds each stream's settings (file storage, max_age and the setting \
that changes it, duplicate window, replicas), x-jetstream.consumers each durable pull consumer (explicit acks, \
ack wait, max deliver -1: retried until acknowledged); each receive operation names its consumer in x-consumer. \
Delivery is at least once; every consumer records what it processed by message id.

Written from the schemas that write and check the messages (docs/api/events.md §AsyncAPI document).`;

let built: Json | undefined;

/**
 * The AsyncAPI 3.0 document of the NATS subjects (docs/api/events.md §AsyncAPI document), built once
 * from the definitions the services use: the event types of the webhooks catalog and their resources,
 * the ingest and platform schemas, STREAMS and CONSUMERS. Served at /api/v1/asyncapi.json and written
 * to docs/asyncapi.json by scripts/asyncapi.mjs.
 */
export function asyncapiDocument(): Json {
  if (built) return built;
  const shared: Record<string, Json> = {};
  const subjects = [
    ...eventSubjects(shared),
    ...ingestSubjects(shared),
    ...platformSubjects(shared),
    ...webhookSubjects(shared),
  ];
  const { channels, messages, operations } = channelsAndOperations(subjects);
  const nats = new URL(defaults().NATS_URL);
  built = {
    asyncapi: "3.0.0",
    info: { title: "Funil NATS subjects", version: "1.0.0", description: DESCRIPTION },
    defaultContentType: "application/json",
    servers: {
      nats: {
        host: nats.host,
        protocol: "nats",
        description: "NATS_URL (JetStream on); the value shown is the default",
      },
    },
    channels,
    operations,
    components: {
      messages,
      schemas: Object.fromEntries(Object.entries(shared).sort(([a], [b]) => a.localeCompare(b))),
    },
    "x-jetstream": jetstream(),
  };
  return built;
}
