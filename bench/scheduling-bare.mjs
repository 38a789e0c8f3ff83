// The bare baseline of the scheduling bench (docs/benchmarks.md): what the hardware gives for the same answers without
// the architecture (no gateway, no Connect hop, no crm RPC, no Redis). A minimal Fastify app that checks the
// bearer key's SHA-256 against an in-memory map:
//   GET  /api/v1/calendars/:id/slots  written as a developer would write it in one process: the calendar, the
//                                     assignees' meetings, the calendar's meetings per assignee and day and its
//                                     day counts read by plain statements (one pool of postgres.js' default
//                                     size, no column transform, columns mapped by hand), the service's pure
//                                     slot function (the rule itself: a developer writes its equal), the page
//                                     of 500 and its signed cursor as every whole list pages, the JSON by hand;
//   GET  /api/v1/appointments         one statement of the page on that pool (the filters the bench sends:
//                                     from, to, calendarKey, status; by start time then id), the meetings'
//                                     columns mapped by hand, the API's signed keyset cursor;
//   GET  /api/v1/appointments/:id     one statement on that pool, the same mapping;
//   GET  /api/v1/calendars            the workspace's calendars by one statement on that pool, mapped by hand,
//                                     paged as every whole list (500, its signed cursor);
//   POST /api/v1/appointments         the service's own booking transaction (the meeting, its outbox event and
//                                     the day's count: the same writes in the same order, which a comparison of
//                                     bookings needs), the contact's name read from crm's table directly.
// scheduling.mjs checks that the bodies equal the gateway's before it measures. Started as its own process,
// so /proc shows its CPU:
//   BARE_DB=postgres://…/funil_x_scheduling BARE_CRM_DB=postgres://…/funil_x_crm \
//   BARE_GATEWAY_DB=postgres://…/funil_x_gateway CURSOR_KEYS=… node bench/scheduling-bare.mjs
// It prints its port on stdout once it listens. Its key map is loaded at start: keys made later are unknown.
import { createHash } from "node:crypto";
import { writeEvent } from "@funil/db";
import { decodeCursor, encodeCursor, useCursorKeys } from "@funil/rpc";
import Fastify from "fastify";
import postgres from "postgres";
import { appointmentWire } from "../services/scheduling/dist/rpc/wire.js";
import { freeSlots, placeOnGrid } from "../services/scheduling/dist/slots.js";
import { appointmentStore } from "../services/scheduling/dist/store/appointments.js";
import { calendarStore } from "../services/scheduling/dist/store/calendars.js";

// The stack's cursor keys (the bench passes them to both), so a cursor either side issues is the same.
useCursorKeys(process.env.CURSOR_KEYS?.split(","), () => {});

const sql = postgres(process.env.BARE_DB, {
  max: 10,
  onnotice: () => {},
  connection: { application_name: "bench_bare" },
});
// The booking runs the service's own store, which reads its rows camel-cased: a pool of its own, with the
// services' size and options (DATABASE_POOL_MAX, default 3, as packages/config reads it).
const options = {
  max: Number(process.env.DATABASE_POOL_MAX || 3),
  transform: postgres.camel,
  onnotice: () => {},
};
const booking = postgres(process.env.BARE_DB, { ...options, connection: { application_name: "bench_bare" } });
const crm = postgres(process.env.BARE_CRM_DB, { ...options, connection: { application_name: "bench_bare" } });
const gateway = postgres(process.env.BARE_GATEWAY_DB, { max: 1, onnotice: () => {} });

const keys = new Map();
for (const k of await gateway`select hash, workspace_id from api_keys where revoked_at is null`)
  keys.set(k.hash, k.workspace_id);
await gateway.end();

// The service's subjects (packages/config: `${FUNIL_ENV}.events.<type>`): its relay publishes these rows too.
const subject = (type) => `${process.env.BARE_FUNIL_ENV}.events.${type}`;
const calendars = calendarStore(booking);
const appointments = appointmentStore(booking, (tx, type, meeting) =>
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

const DAY = 86_400_000;
/** The calendar's local day of an instant, "YYYY-MM-DD". */
const dayIn = (at, timezone) => new Intl.DateTimeFormat("en-CA", { timeZone: timezone }).format(at);

/** What the slot rule needs: the assignees' meetings, and the calendar's per day and per assignee and day. */
async function occupancy(workspaceId, calendar, from, to) {
  const first = dayIn(from, calendar.timezone);
  const last = dayIn(to, calendar.timezone);
  const [meetings, perAssignee, perDay] = await Promise.all([
    sql`select assignee_user_id, start_at, end_at from appointments
        where workspace_id = ${workspaceId} and status = 'scheduled'
          and assignee_user_id = any(${calendar.assigneeUserIds})
          and start_at >= ${new Date(from.getTime() - 2 * DAY)} and start_at < ${to} and end_at > ${from}`,
    sql`select assignee_user_id, local_day::text as day, count(*)::int as count from appointments
        where workspace_id = ${workspaceId} and calendar_id = ${calendar.id} and status = 'scheduled'
          and local_day between ${first} and ${last}
        group by assignee_user_id, local_day`,
    sql`select local_day::text as day, count from day_counts
        where calendar_id = ${calendar.id} and local_day between ${first} and ${last}`,
  ]);
  const busy = new Map();
  for (const m of meetings) {
    if (!busy.has(m.assignee_user_id)) busy.set(m.assignee_user_id, { starts: [], ends: [] });
    const b = busy.get(m.assignee_user_id);
    b.starts.push(m.start_at.getTime());
    b.ends.push(m.end_at.getTime());
  }
  return {
    busy,
    perDay: new Map(perDay.map((r) => [r.day, r.count])),
    perAssigneeDay: new Map(perAssignee.map((r) => [`${r.assignee_user_id} ${r.day}`, r.count])),
  };
}

// Only the query the benchmark sends (from, to, limit, cursor), taken as given.
app.get("/api/v1/calendars/:id/slots", async (req, reply) => {
  const [c] = await sql`
    select id, duration_min, daily_cap, timezone, slot_interval_min, assignee_user_ids, availability
    from calendars where workspace_id = ${req.workspaceId} and id = ${req.params.id}`;
  if (!c) return problem(reply, 404, "not_found", "calendar not found");
  const calendar = {
    id: c.id,
    durationMin: c.duration_min,
    dailyCap: c.daily_cap,
    timezone: c.timezone,
    slotIntervalMin: c.slot_interval_min,
    assigneeUserIds: c.assignee_user_ids,
    availability: c.availability,
  };
  const { from: asked, to: until, limit: asLimit, cursor } = req.query;
  const now = new Date();
  const from = asked && new Date(asked) > now ? new Date(asked) : now;
  const to = until ? new Date(until) : new Date(from.getTime() + 7 * DAY);
  const slots = freeSlots(calendar, { from, to }, await occupancy(req.workspaceId, calendar, from, to));
  // A page of the whole list (services/gateway/src/routes/v1/whole-list.ts): after the cursor's slot.
  const bound = { id: c.id, from: asked, to: until, workspaceId: req.workspaceId };
  const limit = Number(asLimit ?? 500);
  let start = 0;
  if (cursor) {
    const [index, key] = decodeCursor(cursor, "slots", bound, ["number", "string"]);
    const at = slots.findIndex((s) => s.startAt.toISOString() === key);
    start = at >= 0 ? at + 1 : index;
  }
  const page = slots.slice(start, start + limit);
  const last = page.at(-1);
  return {
    data: page.map((s) => ({
      startAt: s.startAt.toISOString(),
      endAt: s.endAt.toISOString(),
      assigneeUserId: s.assigneeUserId,
    })),
    nextCursor:
      last && start + page.length < slots.length
        ? encodeCursor("slots", bound, [start + page.length - 1, last.startAt.toISOString()])
        : null,
  };
});

const iso = (d) => (d ? d.toISOString() : null);
/** A meeting as the API shows it, from the row's columns. */
const meetingJson = (r) => ({
  id: r.id,
  contactId: r.contact_id,
  opportunityId: r.opportunity_id,
  contactName: r.contact_name,
  title: r.title,
  location: r.location,
  conferenceUrl: r.conference_url,
  startAt: r.start_at.toISOString(),
  endAt: r.end_at.toISOString(),
  calendarId: r.calendar_id,
  calendarKey: r.calendar_key,
  assigneeUserId: r.assignee_user_id,
  status: r.status,
  outcome: r.outcome,
  source: r.source,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
  createdByUserId: r.created_by_user_id,
  createdBySource: r.created_by_source,
  canceledAt: iso(r.canceled_at),
  cancelReason: r.cancel_reason,
  outcomeAt: iso(r.outcome_at),
  recoveredFromAppointmentId: r.recovered_from_appointment_id,
});
const meetingColumns = sql`
  id, contact_id, opportunity_id, contact_name, title, location, conference_url, start_at, end_at, calendar_id,
  calendar_key, assignee_user_id, status, outcome, source, created_at, updated_at, created_by_user_id,
  created_by_source, canceled_at, cancel_reason, outcome_at, recovered_from_appointment_id`;

// Only the filters the benchmark sends (from, to, calendarKey, status, limit, cursor), taken as given.
app.get("/api/v1/appointments", async (req) => {
  const { cursor, limit: asked, ...filters } = req.query;
  const ws = req.workspaceId;
  const status = filters.status ?? "scheduled";
  // The cursor is bound to the filters as given, the status with its default, and the workspace.
  const bound = { ...filters, status, workspaceId: ws };
  const limit = Number(asked ?? 100);
  const after = cursor ? decodeCursor(cursor, "appointments", bound, ["timestamp", "string"]) : undefined;
  const rows = await sql`
    select ${meetingColumns} from appointments
    where workspace_id = ${ws}
      ${status === "all" ? sql`` : sql`and status = ${status}`}
      ${filters.from ? sql`and start_at >= ${filters.from}` : sql``}
      ${filters.to ? sql`and start_at < ${filters.to}` : sql``}
      ${filters.calendarKey ? sql`and calendar_key = ${filters.calendarKey}` : sql``}
      ${after ? sql`and (start_at, id) > (${after[0]}, ${after[1]})` : sql``}
    order by start_at, id
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    data: page.map(meetingJson),
    nextCursor:
      rows.length > limit
        ? encodeCursor("appointments", bound, [last.start_at.toISOString(), last.id])
        : null,
  };
});

app.get("/api/v1/appointments/:id", async (req, reply) => {
  const [row] = await sql`
    select ${meetingColumns} from appointments where workspace_id = ${req.workspaceId} and id = ${req.params.id}`;
  if (!row) return problem(reply, 404, "not_found", "appointment not found");
  return meetingJson(row);
});

// The whole list, paged as every whole list (services/gateway/src/routes/v1/whole-list.ts): 500 a page.
app.get("/api/v1/calendars", async (req) => {
  const rows = await sql`
    select id, key, name, duration_min, daily_cap, timezone, slot_interval_min, assignee_user_ids, availability
    from calendars where workspace_id = ${req.workspaceId} order by created_at, id`;
  const bound = { workspaceId: req.workspaceId };
  const limit = Number(req.query.limit ?? 500);
  let start = 0;
  if (req.query.cursor) {
    const [index, id] = decodeCursor(req.query.cursor, "calendars", bound, ["number", "string"]);
    const at = rows.findIndex((c) => c.id === id);
    start = at >= 0 ? at + 1 : index;
  }
  const page = rows.slice(start, start + limit);
  const last = page.at(-1);
  return {
    data: page.map((c) => ({
      id: c.id,
      key: c.key,
      name: c.name,
      durationMin: c.duration_min,
      dailyCap: c.daily_cap,
      timezone: c.timezone,
      slotIntervalMin: c.slot_interval_min,
      assigneeUserIds: c.assignee_user_ids,
      availability: c.availability,
    })),
    nextCursor:
      last && start + page.length < rows.length
        ? encodeCursor("calendars", bound, [start + page.length - 1, last.id])
        : null,
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
    .then(() => Promise.all([sql.end(), booking.end(), crm.end()]))
    .then(() => process.exit(0)),
);
