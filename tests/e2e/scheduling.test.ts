import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CalendarSchema, CalendarService } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { eventsSubscriber, gatewayUrl, keyFor, newWorkspace, type Workspace } from "../helpers.js";
import { contact, deal, member, pipeline } from "./crm-fixtures.js";
import { ahead, book, calendar } from "./scheduling-fixtures.js";

let ws: Workspace;
beforeAll(async () => {
  ws = await newWorkspace();
});

describe("calendars (docs/api/admin.md §Routes; docs/api/meetings.md §Calendar)", () => {
  it("docs/api/admin.md §Routes: created through the admin API, listed by GET /calendars with key; slotIntervalMin defaults to the duration", async () => {
    const cal = await calendar(ws, { timezone: "america/sao_paulo", durationMin: 45 });
    expect(cal).toMatchObject({ timezone: "America/Sao_Paulo", slotIntervalMin: 45, durationMin: 45 });
    const list = await ws.call("GET", "/calendars");
    expect(list.status).toBe(200);
    expect(list.body.data.find((c: { id: string }) => c.id === cal.id)).toMatchObject({
      key: cal.key,
      availability: expect.arrayContaining([{ weekday: 0, start: "00:00", end: "24:00" }]),
    });
    expect(list.body.nextCursor).toBeNull();
  });

  it("docs/api/meetings.md §GET /calendars: lists the workspace's calendars in order of creation, each as created, a calendar created after a list included in the next, none of another workspace", async () => {
    const own = await newWorkspace();
    const other = await newWorkspace();
    const first = await calendar(own, {
      availability: [{ weekday: 1, start: "09:00", end: "12:00" }],
      name: 'Zoë "Zé" 🚀',
    });
    const theirs = await calendar(other);
    const listed = async (w: Workspace) => {
      const res = await w.call("GET", "/calendars");
      expect(res.status).toBe(200);
      return res.body.data;
    };
    expect(await listed(own)).toEqual([first]);
    const second = await calendar(own, { durationMin: 15, slotIntervalMin: 5 });
    const third = await calendar(own);
    expect(await listed(own)).toEqual([first, second, third]);
    expect(await listed(own)).toEqual([first, second, third]);
    expect(await listed(other)).toEqual([theirs]);

    // The gateway asks for the calendars as JSON and sends them on as they come; a caller that does not ask
    // (a gateway copy of the version before, during a roll) gets messages that map to the same JSON.
    const res = await fetch(`${gatewayUrl()}/api/v1/calendars?limit=2`, {
      headers: { authorization: `Bearer ${own.key}` },
    });
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const page = (await res.json()) as { data: unknown[]; nextCursor: string };
    expect(page.data).toEqual([first, second]);
    const next = await own.call("GET", `/calendars?limit=2&cursor=${page.nextCursor}`);
    expect(next.body).toEqual({ data: [third], nextCursor: null });
    const scheduling = createClient(
      CalendarService,
      createGrpcTransport({ baseUrl: inject("schedulingUrl") }),
    );
    const messages = await scheduling.listCalendars({ workspaceId: own.id });
    expect(messages.ids).toEqual([]);
    expect(messages.data.map((c) => toApiJson(CalendarSchema, c))).toEqual([first, second, third]);
    const json = await scheduling.listCalendars({ workspaceId: own.id, apiJson: true });
    expect(json.data).toEqual([]);
    expect(json.ids).toEqual([first.id, second.id, third.id]);
    expect(json.itemsJson.map((b) => JSON.parse(Buffer.from(b).toString("utf8")))).toEqual([
      first,
      second,
      third,
    ]);
  });

  it("docs/api/admin.md §Routes: an unknown timezone is 400; an inactive or unknown assignee is 422 invalid_reference; a key twice is 409", async () => {
    const bad = await ws.admin("POST", `/workspaces/${ws.id}/calendars`, {
      key: "x",
      name: "x",
      durationMin: 30,
      dailyCap: 3,
      timezone: "Mars/Olympus_Mons",
      assigneeUserIds: ["usr_x"],
      availability: [],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toContainEqual({
      path: "body.timezone",
      message: "unknown IANA time zone",
    });
    const gone = await member(ws, { active: false });
    const inactive = await ws.admin("POST", `/workspaces/${ws.id}/calendars`, {
      key: "inactive",
      name: "x",
      durationMin: 30,
      dailyCap: 3,
      timezone: "UTC",
      assigneeUserIds: [(await member(ws)).id, gone.id, "usr_nobody"],
      availability: [],
    });
    expect(inactive.status).toBe(422);
    expect(inactive.body.error.code).toBe("invalid_reference");
    expect(inactive.body.error.details.map((d: { path: string }) => d.path)).toEqual([
      "assigneeUserIds.1",
      "assigneeUserIds.2",
    ]);
    const cal = await calendar(ws);
    const twice = await ws.admin("POST", `/workspaces/${ws.id}/calendars`, {
      key: cal.key,
      name: "again",
      durationMin: 30,
      dailyCap: 3,
      timezone: "UTC",
      assigneeUserIds: cal.assigneeUserIds,
      availability: [],
    });
    expect(twice.status).toBe(409);
  });
});

describe("booking (docs/api/meetings.md §GET /appointments, §POST /appointments)", () => {
  it("docs/api/meetings.md §POST /appointments: books a slot; endAt = startAt + duration, contactName copied from crm, createdBySource api; meeting.booked carries it", async () => {
    const events = await eventsSubscriber();
    try {
      const cal = await calendar(ws);
      const c = await contact(ws, { name: "Maria Souza" });
      const res = await book(ws, {
        calendarId: cal.id,
        contactId: c.id,
        startAt: ahead(2, "10:00").replace(".000Z", "-00:00"),
        assigneeUserId: cal.assigneeUserIds[0],
        title: "Demo",
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({
        contactId: c.id,
        contactName: "Maria Souza",
        startAt: ahead(2, "10:00"),
        endAt: ahead(2, "10:30"),
        calendarKey: cal.key,
        assigneeUserId: cal.assigneeUserIds[0],
        status: "scheduled",
        outcome: null,
        createdBySource: "api",
        createdByUserId: null,
        canceledAt: null,
        recoveredFromAppointmentId: null,
        title: "Demo",
      });
      expect((await ws.call("GET", `/appointments/${res.body.id}`)).body).toEqual(res.body);
      const event = await events.next("meeting.booked", (e) => e.data.id === res.body.id);
      expect(event.data).toEqual(res.body);
    } finally {
      await events.close();
    }
  });

  it("docs/api/meetings.md §POST /appointments: an assignee busy in any calendar is 409 slot_taken; another assignee at that time is fine", async () => {
    const a = await member(ws);
    const b = await member(ws);
    const one = await calendar(ws, { assigneeUserIds: [a.id, b.id] });
    const two = await calendar(ws, { assigneeUserIds: [a.id], durationMin: 60 });
    const c = await contact(ws);
    const start = ahead(3, "14:00");
    expect(
      (await book(ws, { calendarId: two.id, contactId: c.id, startAt: start, assigneeUserId: a.id })).status,
    ).toBe(201);
    // 14:30 overlaps the 60-minute meeting of the other calendar.
    const taken = await book(ws, {
      calendarId: one.id,
      contactId: c.id,
      startAt: ahead(3, "14:30"),
      assigneeUserId: a.id,
    });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe("slot_taken");
    expect(
      (
        await book(ws, {
          calendarId: one.id,
          contactId: c.id,
          startAt: ahead(3, "15:00"),
          assigneeUserId: a.id,
        })
      ).status,
    ).toBe(201);
    expect(
      (await book(ws, { calendarId: one.id, contactId: c.id, startAt: start, assigneeUserId: b.id })).status,
    ).toBe(201);
  });

  it("docs/api/meetings.md §POST /appointments: off the grid, outside availability or in the past is 422 invalid_slot; unknown references are 422 invalid_reference", async () => {
    const cal = await calendar(ws, {
      availability: [0, 1, 2, 3, 4, 5, 6].map((weekday) => ({ weekday, start: "09:00", end: "12:00" })),
    });
    const c = await contact(ws);
    const base = { calendarId: cal.id, contactId: c.id, assigneeUserId: cal.assigneeUserIds[0] };
    for (const startAt of [ahead(2, "09:10"), ahead(2, "13:00"), ahead(-1, "10:00"), ahead(2, "11:45")]) {
      const res = await book(ws, { ...base, startAt });
      expect(res.status, startAt).toBe(422);
      expect(res.body.error.code).toBe("invalid_slot");
    }
    const longer = await book(ws, { ...base, startAt: ahead(2, "11:00"), endAt: ahead(2, "12:30") });
    expect(longer.body.error.code).toBe("invalid_slot");
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ contactId: "ct_nope" }, "contactId"],
      [{ calendarId: "cal_nope" }, "calendarId"],
      [{ assigneeUserId: (await member(ws)).id }, "assigneeUserId"],
      [{ opportunityId: "opp_nope" }, "opportunityId"],
    ];
    for (const [change, path] of cases) {
      const res = await book(ws, { ...base, startAt: ahead(2, "10:00"), ...change });
      expect(res.status, path).toBe(422);
      expect(res.body.error).toMatchObject({
        code: "invalid_reference",
        details: [expect.objectContaining({ path })],
      });
    }
    const pl = await pipeline(ws);
    const d = await deal(ws, { contactId: c.id, pipelineId: pl.id });
    expect((await book(ws, { ...base, startAt: ahead(2, "10:00"), opportunityId: d.id })).body).toMatchObject(
      {
        opportunityId: d.id,
      },
    );
  });

  it("docs/api/meetings.md §POST /appointments: bad input is a 400 naming it, never a 500 (recoveredFromAppointmentId is never accepted from the caller)", async () => {
    const cal = await calendar(ws);
    const c = await contact(ws);
    const base = {
      calendarId: cal.id,
      contactId: c.id,
      assigneeUserId: cal.assigneeUserIds[0],
      startAt: ahead(2),
    };
    for (const body of [
      { ...base, recoveredFromAppointmentId: "apt_x" },
      { ...base, startAt: "tomorrow" },
      { ...base, endAt: base.startAt },
      { ...base, calendarId: "" },
      { ...base, startAt: undefined },
    ]) {
      const res = await book(ws, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
    }
  });

  it("docs/api/meetings.md §POST /appointments/{id}/cancel: the per-day cap is 422 daily_cap_reached; a cancel frees the place at once", async () => {
    const cal = await calendar(ws, { dailyCap: 2 });
    const c = await contact(ws);
    const at = (hhmm: string, i = 0) => ({
      calendarId: cal.id,
      contactId: c.id,
      startAt: ahead(4, hhmm),
      assigneeUserId: cal.assigneeUserIds[i],
    });
    const first = await book(ws, at("09:00"));
    expect(first.status).toBe(201);
    expect((await book(ws, at("09:00", 1))).status).toBe(201);
    const over = await book(ws, at("11:00"));
    expect(over.status).toBe(422);
    expect(over.body.error.code).toBe("daily_cap_reached");
    // Another day of the same calendar is not affected.
    expect((await book(ws, { ...at("11:00"), startAt: ahead(5, "11:00") })).status).toBe(201);
    const slots = await ws.call(
      "GET",
      `/calendars/${cal.id}/slots?from=${ahead(4, "00:00")}&to=${ahead(5, "00:00")}`,
    );
    expect(slots.body.data).toEqual([]);
    const canceled = await ws.call("POST", `/appointments/${first.body.id}/cancel`, {
      reason: "client asked",
    });
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ status: "canceled", cancelReason: "client asked" });
    expect(canceled.body.canceledAt).not.toBeNull();
    expect((await book(ws, at("11:00"))).status).toBe(201);
  });

  it("docs/api/meetings.md §POST /appointments: twenty concurrent requests for one free time: exactly one 201, the rest 409 slot_taken", async () => {
    const cal = await calendar(ws);
    const c = await contact(ws);
    const body = {
      calendarId: cal.id,
      contactId: c.id,
      startAt: ahead(6, "08:00"),
      assigneeUserId: cal.assigneeUserIds[0],
    };
    const results = await Promise.all(Array.from({ length: 20 }, () => book(ws, body)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 201)) {
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe("slot_taken");
    }
    const listed = await ws.call("GET", `/appointments?calendarKey=${cal.key}`);
    expect(listed.body.data).toHaveLength(1);
  });

  it("docs/api/meetings.md §POST /appointments: concurrent requests for the last places of a day: exactly the remaining places succeed", async () => {
    const assignees: string[] = [];
    for (let i = 0; i < 4; i++) assignees.push((await member(ws)).id);
    const cal = await calendar(ws, { dailyCap: 5, assigneeUserIds: assignees });
    const c = await contact(ws);
    const at = (hhmm: string, i: number) => ({
      calendarId: cal.id,
      contactId: c.id,
      startAt: ahead(7, hhmm),
      assigneeUserId: assignees[i % 4],
    });
    for (const hhmm of ["06:00", "06:30", "07:00"]) expect((await book(ws, at(hhmm, 0))).status).toBe(201);
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => book(ws, at(`1${Math.floor(i / 4)}:00`, i))),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(2);
    for (const r of results.filter((x) => x.status !== 201))
      expect(r.body.error.code).toBe("daily_cap_reached");
  });

  it("docs/api/conventions.md §Idempotency-Key: Idempotency-Key replays the booking; another body is 422; a replay after the day filled still replays", async () => {
    const cal = await calendar(ws, { dailyCap: 1 });
    const c = await contact(ws);
    const body = {
      calendarId: cal.id,
      contactId: c.id,
      startAt: ahead(8, "09:00"),
      assigneeUserId: cal.assigneeUserIds[0],
    };
    const key = { "idempotency-key": `apt-${Date.now()}` };
    const first = await book(ws, body, key);
    expect(first.status).toBe(201);
    const again = await book(ws, body, key);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    const other = await book(ws, { ...body, startAt: ahead(8, "10:00") }, key);
    expect(other.body.error.code).toBe("idempotency_key_reused");
    const full = await book(
      ws,
      { ...body, startAt: ahead(8, "11:00") },
      { "idempotency-key": `${key["idempotency-key"]}-2` },
    );
    expect(full.body.error.code).toBe("daily_cap_reached");
    const late = await book(ws, body, key);
    expect(late.status).toBe(201);
    expect(late.body).toEqual(first.body);
    const raceKey = { "idempotency-key": `race-${Date.now()}` };
    const races = await Promise.all(
      Array.from({ length: 8 }, () => book(ws, { ...body, startAt: ahead(9, "09:00") }, raceKey)),
    );
    expect(new Set(races.filter((r) => r.status === 201).map((r) => r.body.id)).size).toBe(1);
    for (const r of races.filter((x) => x.status !== 201))
      expect(r.body.error.code).toBe("idempotency_key_in_use");
  });
});

describe("recoveredFromAppointmentId (docs/api/meetings.md §Meeting (appointment), §POST /appointments)", () => {
  it("docs/api/meetings.md §POST /appointments: a new meeting recovers the contact's latest unrecovered noshow, once; never another contact's", async () => {
    const cal = await calendar(ws);
    const c = await contact(ws);
    const base = { calendarId: cal.id, contactId: c.id, assigneeUserId: cal.assigneeUserIds[0] };
    const older = (await book(ws, { ...base, startAt: ahead(10, "09:00") })).body;
    const newer = (await book(ws, { ...base, startAt: ahead(10, "10:00") })).body;
    for (const m of [older, newer]) {
      const res = await ws.call("POST", `/appointments/${m.id}/outcome`, { outcome: "noshow" });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ outcome: "noshow" });
      expect(res.body.outcomeAt).not.toBeNull();
    }
    const other = (
      await book(ws, { ...base, contactId: (await contact(ws)).id, startAt: ahead(10, "11:00") })
    ).body;
    expect(other.recoveredFromAppointmentId).toBeNull();
    expect((await book(ws, { ...base, startAt: ahead(10, "12:00") })).body.recoveredFromAppointmentId).toBe(
      newer.id,
    );
    expect((await book(ws, { ...base, startAt: ahead(10, "13:00") })).body.recoveredFromAppointmentId).toBe(
      older.id,
    );
    expect(
      (await book(ws, { ...base, startAt: ahead(10, "14:00") })).body.recoveredFromAppointmentId,
    ).toBeNull();
  });

  it("docs/api/meetings.md §POST /appointments: concurrent bookings of one contact recover one noshow exactly once", async () => {
    const cal = await calendar(ws);
    const c = await contact(ws);
    const base = { calendarId: cal.id, contactId: c.id, assigneeUserId: cal.assigneeUserIds[0] };
    const missed = (await book(ws, { ...base, startAt: ahead(11, "09:00") })).body;
    await ws.call("POST", `/appointments/${missed.id}/outcome`, { outcome: "noshow" });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => book(ws, { ...base, startAt: ahead(11, `1${i}:00`) })),
    );
    expect(results.every((r) => r.status === 201)).toBe(true);
    expect(results.filter((r) => r.body.recoveredFromAppointmentId === missed.id)).toHaveLength(1);
  });
});

describe("cancel, reschedule, outcome (docs/api/meetings.md §POST /appointments/{id}/cancel, /reschedule, /outcome)", () => {
  it("docs/api/meetings.md §POST /appointments/{id}/reschedule: reschedule moves the meeting under the same checks and frees the old time; meeting.rescheduled and meeting.canceled are emitted", async () => {
    const events = await eventsSubscriber();
    try {
      const cal = await calendar(ws, { dailyCap: 1 });
      const c = await contact(ws);
      const [a, b] = cal.assigneeUserIds;
      const m = (
        await book(ws, {
          calendarId: cal.id,
          contactId: c.id,
          startAt: ahead(12, "09:00"),
          assigneeUserId: a,
        })
      ).body;
      const blocker = (
        await book(ws, {
          calendarId: cal.id,
          contactId: c.id,
          startAt: ahead(13, "09:00"),
          assigneeUserId: b,
        })
      ).body;
      // The next day is at its cap of 1.
      const full = await ws.call("POST", `/appointments/${m.id}/reschedule`, { startAt: ahead(13, "10:00") });
      expect(full.body.error.code).toBe("daily_cap_reached");
      const off = await ws.call("POST", `/appointments/${m.id}/reschedule`, { startAt: ahead(12, "09:10") });
      expect(off.body.error.code).toBe("invalid_slot");
      const moved = await ws.call("POST", `/appointments/${m.id}/reschedule`, {
        startAt: ahead(12, "11:00"),
        assigneeUserId: b,
      });
      expect(moved.status).toBe(200);
      expect(moved.body).toMatchObject({
        startAt: ahead(12, "11:00"),
        endAt: ahead(12, "11:30"),
        assigneeUserId: b,
      });
      expect((await events.next("meeting.rescheduled", (e) => e.data.id === m.id)).data).toEqual(moved.body);
      // The old time is free again for a (the day's place stayed with the moved meeting, so cancel it first).
      const canceled = await ws.call("POST", `/appointments/${blocker.id}/cancel`, {});
      expect((await events.next("meeting.canceled", (e) => e.data.id === blocker.id)).data).toEqual(
        canceled.body,
      );
      const day12 = await ws.call("POST", `/appointments/${m.id}/reschedule`, {
        startAt: ahead(13, "09:00"),
        assigneeUserId: a,
      });
      expect(day12.status).toBe(200);
      expect(
        (
          await book(ws, {
            calendarId: cal.id,
            contactId: c.id,
            startAt: ahead(12, "09:00"),
            assigneeUserId: a,
          })
        ).status,
      ).toBe(201);
    } finally {
      await events.close();
    }
  });

  it("docs/api/meetings.md §POST /appointments/{id}/outcome: outcome realizada | noshow | reagendada with outcomeAt, the last one stands; 409 on a canceled meeting", async () => {
    const events = await eventsSubscriber();
    try {
      const cal = await calendar(ws);
      const c = await contact(ws);
      const m = (
        await book(ws, {
          calendarId: cal.id,
          contactId: c.id,
          startAt: ahead(14),
          assigneeUserId: cal.assigneeUserIds[0],
        })
      ).body;
      const done = await ws.call("POST", `/appointments/${m.id}/outcome`, { outcome: "realizada" });
      expect(done.body).toMatchObject({ outcome: "realizada" });
      expect((await events.next("meeting.outcome", (e) => e.data.id === m.id)).data).toEqual(done.body);
      expect(
        (await ws.call("POST", `/appointments/${m.id}/outcome`, { outcome: "reagendada" })).body.outcome,
      ).toBe("reagendada");
      expect((await ws.call("POST", `/appointments/${m.id}/outcome`, { outcome: "cancelled" })).status).toBe(
        400,
      );
      await ws.call("POST", `/appointments/${m.id}/cancel`, {});
      const late = await ws.call("POST", `/appointments/${m.id}/outcome`, { outcome: "realizada" });
      expect(late.status).toBe(409);
      const move = await ws.call("POST", `/appointments/${m.id}/reschedule`, { startAt: ahead(15) });
      expect(move.status).toBe(409);
      expect((await ws.call("POST", `/appointments/apt_nope/cancel`, {})).status).toBe(404);
    } finally {
      await events.close();
    }
  });
});

describe("GET /appointments (docs/api/meetings.md §GET /appointments; docs/api/conventions.md §Lists and pagination)", () => {
  it("docs/api/meetings.md §Meeting (appointment): reads by id at once (one RPC batch, one statement) each answer their own meeting; another workspace's id is 404 not_found", async () => {
    const [own, other] = [await newWorkspace(), await newWorkspace()];
    const [cal, otherCal] = [await calendar(own), await calendar(other)];
    const [c, oc] = [await contact(own), await contact(other)];
    const mine = [];
    for (const hhmm of ["09:00", "10:00", "11:00"])
      mine.push(
        (
          await book(own, {
            calendarId: cal.id,
            contactId: c.id,
            startAt: ahead(4, hhmm),
            assigneeUserId: cal.assigneeUserIds[0],
          })
        ).body.id as string,
      );
    const theirs = (
      await book(other, {
        calendarId: otherCal.id,
        contactId: oc.id,
        startAt: ahead(4, "09:00"),
        assigneeUserId: otherCal.assigneeUserIds[0],
      })
    ).body.id as string;
    const ids = [mine[0]!, theirs, mine[1]!, mine[2]!, "ap_unknown", mine[0]!];
    const reads = await Promise.all(ids.map((id) => own.call("GET", `/appointments/${id}`)));
    expect(reads.map((r) => r.status)).toEqual([200, 404, 200, 200, 404, 200]);
    expect(reads.map((r) => r.body.id ?? r.body.error.code)).toEqual([
      mine[0],
      "not_found",
      mine[1],
      mine[2],
      "not_found",
      mine[0],
    ]);
    expect(reads[2]!.body.startAt).toBe(ahead(4, "10:00"));
  });

  it("docs/api/meetings.md §GET /appointments: status scheduled by default, canceled and all with canceledAt; calendarKey, from/to on startAt, outcome; keyset by (startAt, id)", async () => {
    const own = await newWorkspace();
    const cal = await calendar(own);
    const c = await contact(own);
    const made = [];
    for (const hhmm of ["13:00", "09:00", "11:00", "10:00", "12:00"])
      made.push(
        (
          await book(own, {
            calendarId: cal.id,
            contactId: c.id,
            startAt: ahead(3, hhmm),
            assigneeUserId: cal.assigneeUserIds[0],
          })
        ).body,
      );
    await own.call("POST", `/appointments/${made[0].id}/cancel`, {});
    await own.call("POST", `/appointments/${made[1].id}/outcome`, { outcome: "noshow" });
    const starts = (r: { body: { data: Array<{ startAt: string }> } }) =>
      r.body.data.map((a) => a.startAt.slice(11, 16));
    expect(starts(await own.call("GET", "/appointments"))).toEqual(["09:00", "10:00", "11:00", "12:00"]);
    const all = await own.call("GET", "/appointments?status=all");
    expect(starts(all)).toEqual(["09:00", "10:00", "11:00", "12:00", "13:00"]);
    expect(all.body.data[4].canceledAt).not.toBeNull();
    expect(starts(await own.call("GET", "/appointments?status=canceled"))).toEqual(["13:00"]);
    expect(
      starts(await own.call("GET", `/appointments?from=${ahead(3, "10:00")}&to=${ahead(3, "12:00")}`)),
    ).toEqual(["10:00", "11:00"]);
    expect(starts(await own.call("GET", "/appointments?outcome=noshow"))).toEqual(["09:00"]);
    expect((await own.call("GET", "/appointments?calendarKey=other")).body.data).toEqual([]);
    const page1 = await own.call("GET", "/appointments?limit=3");
    expect(starts(page1)).toEqual(["09:00", "10:00", "11:00"]);
    const page2 = await own.call("GET", `/appointments?limit=3&cursor=${page1.body.nextCursor}`);
    expect(starts(page2)).toEqual(["12:00"]);
    expect(page2.body.nextCursor).toBeNull();
    const reused = await own.call("GET", `/appointments?status=all&cursor=${page1.body.nextCursor}`);
    expect(reused.body.error.code).toBe("invalid_cursor");
    const polled = await own.call("GET", `/appointments?status=all&updatedAfter=${made[4].updatedAt}`);
    expect(polled.body.data.map((a: { id: string }) => a.id).sort()).toEqual([made[0].id, made[1].id].sort());
    for (const q of ["status=gone", "limit=0", "from=yesterday", "calendarKey=" + "k".repeat(81), "bogus=1"])
      expect((await own.call("GET", `/appointments?${q}`)).status, q).toBe(400);
    expect((await ws.call("GET", `/appointments/${made[1].id}`)).status).toBe(404);
  });
});

describe("slots (docs/api/meetings.md §GET /calendars/{id}/slots)", () => {
  it("docs/api/meetings.md §GET /calendars/{id}/slots: free times only, each naming the round-robin assignee; range at most 31 days; unknown calendar 404", async () => {
    const cal = await calendar(ws, {
      availability: [0, 1, 2, 3, 4, 5, 6].map((weekday) => ({ weekday, start: "09:00", end: "11:00" })),
    });
    const [a, b] = cal.assigneeUserIds;
    const c = await contact(ws);
    await book(ws, { calendarId: cal.id, contactId: c.id, startAt: ahead(5, "09:00"), assigneeUserId: a });
    const res = await ws.call(
      "GET",
      `/calendars/${cal.id}/slots?from=${ahead(5, "00:00")}&to=${ahead(6, "00:00")}`,
    );
    expect(res.status).toBe(200);
    expect(
      res.body.data.map((s: { startAt: string; assigneeUserId: string }) => [
        s.startAt.slice(11, 16),
        s.assigneeUserId,
      ]),
    ).toEqual([
      ["09:00", b],
      ["09:30", b],
      ["10:00", b],
      ["10:30", b],
    ]);
    expect(res.body.data[0].endAt).toBe(ahead(5, "09:30"));
    const long = await ws.call(
      "GET",
      `/calendars/${cal.id}/slots?from=${ahead(1, "00:00")}&to=${ahead(33, "00:00")}`,
    );
    expect(long.status).toBe(400);
    expect((await ws.call("GET", `/calendars/cal_nope/slots`)).status).toBe(404);
    const readOnly = await keyFor(ws, ["calendars.read"]);
    expect((await readOnly.call("GET", `/calendars/${cal.id}/slots`)).status).toBe(200);
    const denied = await book(readOnly, {
      calendarId: cal.id,
      contactId: c.id,
      startAt: ahead(5, "10:00"),
      assigneeUserId: a,
    });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe("missing_scope");
  });

  it("docs/api/conventions.md §Lists and pagination: slots page by limit and cursor like the short lists, a booked slot between two pages skips nobody, a cursor of another range is invalid_cursor", async () => {
    const cal = await calendar(ws, {
      availability: [0, 1, 2, 3, 4, 5, 6].map((weekday) => ({ weekday, start: "09:00", end: "12:00" })),
    });
    const range = `from=${ahead(5, "00:00")}&to=${ahead(7, "00:00")}`;
    const path = `/calendars/${cal.id}/slots?${range}`;
    const whole = await ws.call("GET", path);
    expect(whole.status).toBe(200);
    expect(whole.body.data).toHaveLength(12);
    expect(whole.body.nextCursor).toBeNull();
    const starts = (page: { data: Array<{ startAt: string }> }) => page.data.map((s) => s.startAt);

    const pages = [];
    for (let cursor: string | null = ""; cursor !== null; ) {
      const page = await ws.call("GET", `${path}&limit=5${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      pages.push(page.body);
      cursor = page.body.nextCursor;
    }
    expect(pages.map((p) => p.data.length)).toEqual([5, 5, 2]);
    expect(pages.flatMap(starts)).toEqual(starts(whole.body));

    // Every assignee booked at the first page's last time: that slot is gone, the next page starts after it.
    const first = await ws.call("GET", `${path}&limit=5`);
    const lastOfFirst = first.body.data[4].startAt;
    const c = await contact(ws);
    for (const assigneeUserId of cal.assigneeUserIds)
      expect(
        (await book(ws, { calendarId: cal.id, contactId: c.id, startAt: lastOfFirst, assigneeUserId }))
          .status,
      ).toBe(201);
    const next = await ws.call("GET", `${path}&limit=5&cursor=${first.body.nextCursor}`);
    expect(starts(next.body)).toEqual(starts(whole.body).slice(5, 10));

    const other = await ws.call(
      "GET",
      `/calendars/${cal.id}/slots?from=${ahead(5, "00:00")}&to=${ahead(8, "00:00")}&cursor=${first.body.nextCursor}`,
    );
    expect(other.status).toBe(400);
    expect(other.body.error.code).toBe("invalid_cursor");
  });
});
