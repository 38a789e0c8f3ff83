import { describeError } from "@funil/rpc";
import { describe, expect, it } from "vitest";
import { daySlots, freeSlots, type Grid, placeOnGrid, slotRange } from "./slots.js";

const iso = (slots: Array<{ startAt: Date }>) => slots.map((s) => s.startAt.toISOString());
const grid = (
  timezone: string,
  weekday: number,
  start: string,
  end: string,
  extra: Partial<Grid> = {},
): Grid => ({
  timezone,
  durationMin: 30,
  slotIntervalMin: 30,
  availability: [{ weekday, start, end }],
  ...extra,
});
const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return describeError(err).code;
  }
  return "no error";
};
const LONG_AGO = new Date("2000-01-01T00:00:00Z");
/** Meetings as the store gives them: per assignee, epoch ms by start. */
const busyOf = (meetings: Array<{ assigneeUserId: string; startAt: Date; endAt: Date }>) => {
  const busy = new Map<string, { starts: number[]; ends: number[] }>();
  for (const m of [...meetings].sort((a, b) => a.startAt.getTime() - b.startAt.getTime())) {
    const b = busy.get(m.assigneeUserId) ?? { starts: [], ends: [] };
    b.starts.push(m.startAt.getTime());
    b.ends.push(m.endAt.getTime());
    busy.set(m.assigneeUserId, b);
  }
  return busy;
};

describe("slots on DST change days (docs/api/meetings.md §GET /calendars/{id}/slots: inside availability in the calendar's timezone)", () => {
  it("docs/api/meetings.md §GET /calendars/{id}/slots: northern spring-forward (America/New_York 2026-03-08): 02:00 and 02:30 do not exist and are skipped", () => {
    expect(iso(daySlots(grid("America/New_York", 0, "00:00", "05:00"), "2026-03-08"))).toEqual([
      "2026-03-08T05:00:00.000Z",
      "2026-03-08T05:30:00.000Z",
      "2026-03-08T06:00:00.000Z",
      "2026-03-08T06:30:00.000Z",
      "2026-03-08T07:00:00.000Z", // 03:00 EDT
      "2026-03-08T07:30:00.000Z",
      "2026-03-08T08:00:00.000Z",
      "2026-03-08T08:30:00.000Z",
    ]);
  });

  it("docs/api/meetings.md §GET /calendars/{id}/slots: northern fall-back (America/New_York 2026-11-01): 01:00 and 01:30 happen twice and are offered once", () => {
    expect(iso(daySlots(grid("America/New_York", 0, "00:00", "03:00"), "2026-11-01"))).toEqual([
      "2026-11-01T04:00:00.000Z",
      "2026-11-01T04:30:00.000Z",
      "2026-11-01T05:00:00.000Z", // the first 01:00 (EDT)
      "2026-11-01T05:30:00.000Z",
      "2026-11-01T07:00:00.000Z", // 02:00 EST
      "2026-11-01T07:30:00.000Z", // 02:30 EST, ends at 03:00 EST, the window's end
    ]);
  });

  it("docs/api/meetings.md §GET /calendars/{id}/slots: southern spring-forward (America/Sao_Paulo 2018-11-04, midnight skipped): 00:00 and 00:30 are skipped", () => {
    expect(iso(daySlots(grid("America/Sao_Paulo", 0, "00:00", "02:00"), "2018-11-04"))).toEqual([
      "2018-11-04T03:00:00.000Z", // 01:00 -02:00
      "2018-11-04T03:30:00.000Z",
    ]);
  });

  it("docs/api/meetings.md §GET /calendars/{id}/slots: southern fall-back (America/Sao_Paulo 2019-02-16, 23:00–23:59 twice): each local time once, window to 24:00", () => {
    expect(iso(daySlots(grid("America/Sao_Paulo", 6, "22:00", "24:00"), "2019-02-16"))).toEqual([
      "2019-02-17T00:00:00.000Z", // 22:00 -02:00
      "2019-02-17T00:30:00.000Z",
      "2019-02-17T01:00:00.000Z", // the first 23:00
      "2019-02-17T01:30:00.000Z",
    ]);
  });

  it("docs/api/meetings.md §GET /calendars/{id}/slots: Australia/Sydney and Europe/Lisbon change days have the hours those days really have", () => {
    // Sydney 2026-04-05: 03:00 AEDT becomes 02:00 AEST; 2026-10-04: 02:00 AEST becomes 03:00 AEDT.
    expect(daySlots(grid("Australia/Sydney", 0, "01:00", "04:00"), "2026-04-05")).toHaveLength(6);
    expect(iso(daySlots(grid("Australia/Sydney", 0, "01:00", "04:00"), "2026-10-04"))).toEqual([
      "2026-10-03T15:00:00.000Z",
      "2026-10-03T15:30:00.000Z",
      "2026-10-03T16:00:00.000Z", // 03:00 AEDT
      "2026-10-03T16:30:00.000Z",
    ]);
    // Lisbon 2026-03-29: 01:00 becomes 02:00; 2026-10-25: 02:00 becomes 01:00.
    expect(daySlots(grid("Europe/Lisbon", 0, "00:00", "03:00"), "2026-03-29")).toHaveLength(4);
    expect(iso(daySlots(grid("Europe/Lisbon", 0, "00:30", "02:00"), "2026-10-25"))).toEqual([
      "2026-10-24T23:30:00.000Z",
      "2026-10-25T00:00:00.000Z", // the first 01:00 (WEST)
      "2026-10-25T00:30:00.000Z",
    ]);
  });

  it("docs/api/meetings.md §GET /calendars/{id}/slots: an ordinary day keeps its grid: interval and duration apart, meetings end inside the window", () => {
    const g = grid("America/Sao_Paulo", 1, "09:00", "11:00", { durationMin: 45, slotIntervalMin: 30 });
    expect(iso(daySlots(g, "2026-12-07"))).toEqual([
      "2026-12-07T12:00:00.000Z",
      "2026-12-07T12:30:00.000Z",
      "2026-12-07T13:00:00.000Z", // 10:00–10:45; 10:30 would end at 11:15
    ]);
    expect(daySlots(g, "2026-12-08")).toEqual([]);
  });
});

describe("a booking's time (docs/api/meetings.md §POST /appointments: 422 invalid_slot)", () => {
  const g = grid("America/New_York", 0, "00:00", "04:00");
  it("docs/api/meetings.md §POST /appointments: a start off the grid, outside availability, skipped by the clocks, or in the past is invalid_slot", () => {
    expect(codeOf(() => placeOnGrid(g, new Date("2026-03-08T05:10:00Z"), undefined, LONG_AGO))).toBe(
      "invalid_slot",
    );
    expect(codeOf(() => placeOnGrid(g, new Date("2026-03-09T05:00:00Z"), undefined, LONG_AGO))).toBe(
      "invalid_slot",
    );
    expect(
      codeOf(() =>
        placeOnGrid(g, new Date("2026-03-08T05:00:00Z"), undefined, new Date("2026-03-08T06:00:00Z")),
      ),
    ).toBe("invalid_slot");
    // On the fall-back day the second 01:00 (06:00Z) is not the slot; the first (05:00Z) is.
    expect(codeOf(() => placeOnGrid(g, new Date("2026-11-01T06:00:00Z"), undefined, LONG_AGO))).toBe(
      "invalid_slot",
    );
    expect(placeOnGrid(g, new Date("2026-11-01T05:00:00Z"), undefined, LONG_AGO)).toMatchObject({
      endAt: new Date("2026-11-01T05:30:00Z"),
      day: "2026-11-01",
    });
  });

  it("docs/api/meetings.md §POST /appointments: endAt defaults to startAt + duration; a longer one must end inside the window, and after startAt", () => {
    const start = new Date("2026-03-08T05:00:00Z");
    expect(placeOnGrid(g, start, new Date("2026-03-08T06:00:00Z"), LONG_AGO).endAt).toEqual(
      new Date("2026-03-08T06:00:00Z"),
    );
    expect(codeOf(() => placeOnGrid(g, start, new Date("2026-03-08T09:00:00Z"), LONG_AGO))).toBe(
      "invalid_slot",
    );
    expect(codeOf(() => placeOnGrid(g, start, start, LONG_AGO))).toBe("validation_failed");
  });
});

describe("free slots and round-robin (docs/api/meetings.md §GET /calendars/{id}/slots)", () => {
  const cal = { ...grid("UTC", 1, "09:00", "11:00"), dailyCap: 3, assigneeUserIds: ["ana", "bia"] };
  const range = { from: new Date("2026-12-07T00:00:00Z"), to: new Date("2026-12-09T00:00:00Z") };
  const at = (h: string) => new Date(`2026-12-07T${h}:00Z`);

  it("docs/api/meetings.md §GET /calendars/{id}/slots: the assignee with the fewest meetings that day, ties by the order of assigneeUserIds; busy ones skipped", () => {
    const slots = freeSlots(cal, range, {
      perDay: new Map([["2026-12-07", 1]]),
      perAssigneeDay: new Map([["ana 2026-12-07", 1]]),
      busy: busyOf([
        { assigneeUserId: "ana", startAt: at("09:00"), endAt: at("09:30") },
        // bia is busy in another calendar at 10:00–10:30.
        { assigneeUserId: "bia", startAt: at("10:00"), endAt: at("10:30") },
      ]),
    });
    expect(slots.map((s) => [s.startAt.toISOString().slice(11, 16), s.assigneeUserId])).toEqual([
      ["09:00", "bia"],
      ["09:30", "bia"],
      ["10:00", "ana"],
      ["10:30", "bia"],
    ]);
    const tie = freeSlots(cal, range, { perDay: new Map(), perAssigneeDay: new Map(), busy: new Map() });
    expect(tie.every((s) => s.assigneeUserId === "ana")).toBe(true);
  });

  it("docs/api/meetings.md §GET /calendars/{id}/slots: a day at its cap offers nothing; nobody free means no slot", () => {
    expect(
      freeSlots(cal, range, {
        perDay: new Map([["2026-12-07", 3]]),
        perAssigneeDay: new Map(),
        busy: new Map(),
      }),
    ).toEqual([]);
    const allBusy = ["ana", "bia"].map((a) => ({
      assigneeUserId: a,
      startAt: at("09:00"),
      endAt: at("11:00"),
    }));
    expect(
      freeSlots(cal, range, { perDay: new Map(), perAssigneeDay: new Map(), busy: busyOf(allBusy) }),
    ).toEqual([]);
  });

  it("docs/api/meetings.md §GET /calendars/{id}/slots: the range is at most 31 days, to after from; default now .. now + 7 days; a past from reads as now", () => {
    const now = new Date("2026-12-01T00:00:00Z");
    expect(slotRange(undefined, undefined, now)).toEqual({ from: now, to: new Date("2026-12-08T00:00:00Z") });
    expect(slotRange(new Date("2026-11-01T00:00:00Z"), new Date("2026-12-02T00:00:00Z"), now).from).toEqual(
      now,
    );
    expect(codeOf(() => slotRange(now, new Date("2027-01-02T00:00:01Z"), now))).toBe("validation_failed");
    expect(codeOf(() => slotRange(now, now, now))).toBe("validation_failed");
  });
});
