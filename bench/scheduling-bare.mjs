// The bare baseline of the scheduling bench (docs/benchmarks.md): what the hardware gives for the same answers without
// the architecture (no gateway, no Connect hop, no crm RPC, no Redis). A minimal Fastify app that checks the
// bearer key's SHA-256 against an in-memory map and runs the scheduling service's own stores (the same SQL,
// driver and options) on the scheduling database:
//   GET  /api/v1/calendars/:id/slots  the same reads of busy time and day counts, the service's compiled pure
//                                     slot function, the same JSON slot list;
//   POST /api/v1/appointments         the same booking transaction (the meeting, its outbox event and the
//                                     day's count), the contact's name read from crm's table directly.
// scheduling.mjs checks that the bodies equal the gateway's before it measures. Started as its own process,
// so /proc shows its CPU:
//   BARE_DB=postgres://…/funil_x_scheduling BARE_CRM_DB=postgres://…/funil_x_crm \
//   BARE_GATEWAY_DB=postgres://…/funil_x_gateway node bench/scheduling-bare.mjs
// It prints its port on stdout once it listens. Its key map is loaded at start: keys made later are unknown.
import { createHash } from "node:crypto";
import { writeEvent } from "@funil/db";
import Fastify from "fastify";
import postgres from "postgres";
import { localDayOf } from "../services/scheduling/dist/local-time.js";
import { appointmentWire } from "../services/scheduling/dist/rpc/wire.js";
import { freeSlots, placeOnGrid, slotRange } from "../services/scheduling/dist/slots.js";
import { appointmentStore } from "../services/scheduling/dist/store/appointments.js";
import { calendarStore } from "../services/scheduling/dist/store/calendars.js";

// The services' pool size and options (DATABASE_POOL_MAX, default 3, as packages/config reads it).
const options = {
  max: Number(process.env.DATABASE_POOL_MAX || 3),
  transform: postgres.camel,
  onnotice: () => {},
};
const sql = postgres(process.env.BARE_DB, { ...options, connection: { application_name: "bench_bare" } });
const crm = postgres(process.env.BARE_CRM_DB, { ...options, connection: { application_name: "bench_bare" } });
const gateway = postgres(process.env.BARE_GATEWAY_DB, { max: 1, onnotice: () => {} });

const keys = new Map();
for (const k of await gateway`select hash, workspace_id from api_keys where revoked_at is null`)
  keys.set(k.hash, k.workspace_id);
await gateway.end();

// The service's subjects (packages/config: `${FUNIL_ENV}.events.<type>`): its relay publishes these rows too.
const subject = (type) => `${process.env.BARE_FUNIL_ENV}.events.${type}`;
const calendars = calendarStore(sql);
const appointments = appointmentStore(sql, (tx, type, meeting) =>
  writeEvent(tx, subject, {
    type,
    workspaceId: meeting.workspaceId,
    occurredAt: meeting.updatedAt,
    data: appointmentWire.json(meeting),
  }),
);

const app = Fastify();
const problem = (reply, status, code, message) => reply.code(status).send({ error: { code, message } });
app.addHook("onRequest", async (req, reply) => {
  const header = req.headers.authorization;
  const workspaceId = header?.startsWith("Bearer ")
    ? keys.get(createHash("sha256").update(header.slice(7)).digest("hex"))
    : undefined;
  if (!workspaceId) return problem(reply, 401, "unauthorized", "bad key");
  req.workspaceId = workspaceId;
});

app.get("/api/v1/calendars/:id/slots", async (req, reply) => {
  const calendar = await calendars.get(req.workspaceId, req.params.id);
  if (!calendar) return problem(reply, 404, "not_found", "calendar not found");
  const { from, to } = req.query;
  const range = slotRange(from ? new Date(from) : undefined, to ? new Date(to) : undefined, new Date());
  const occupancy = await appointments.occupancy(req.workspaceId, calendar, range, {
    first: localDayOf(range.from, calendar.timezone),
    last: localDayOf(range.to, calendar.timezone),
  });
  return {
    data: freeSlots(calendar, range, occupancy).map((s) => ({
      startAt: s.startAt.toISOString(),
      endAt: s.endAt.toISOString(),
      assigneeUserId: s.assigneeUserId,
    })),
    nextCursor: null,
  };
});

app.post("/api/v1/appointments", async (req, reply) => {
  const body = req.body;
  const now = new Date();
  const [calendar, [contact]] = await Promise.all([
    calendars.get(req.workspaceId, body.calendarId),
    crm`select name from contacts where workspace_id = ${req.workspaceId} and id = ${body.contactId}`,
  ]);
  if (!calendar || !contact || !calendar.assigneeUserIds.includes(body.assigneeUserId))
    return problem(reply, 422, "invalid_reference", "unknown calendar, contact or assignee");
  try {
    const slot = placeOnGrid(calendar, new Date(body.startAt), undefined, now);
    const meeting = await appointments.book(
      req.workspaceId,
      {
        calendarId: calendar.id,
        calendarKey: calendar.key,
        dailyCap: calendar.dailyCap,
        contactId: body.contactId,
        contactName: contact.name ?? null,
        opportunityId: null,
        title: null,
        location: null,
        conferenceUrl: null,
        source: null,
        assigneeUserId: body.assigneeUserId,
        startAt: slot.startAt,
        endAt: slot.endAt,
        localDay: slot.day,
      },
      now,
    );
    return reply.code(201).send(appointmentWire.json(meeting));
  } catch (err) {
    return problem(reply, 409, err.code ?? "conflict", String(err.message));
  }
});

const address = await app.listen({ port: 0, host: "127.0.0.1" });
console.log(new URL(address).port);
process.once("SIGTERM", () =>
  app
    .close()
    .then(() => Promise.all([sql.end(), crm.end()]))
    .then(() => process.exit(0)),
);
