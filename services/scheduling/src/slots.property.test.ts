import fc from "fast-check";
import { DateTime } from "luxon";
import { describe, expect, it } from "vitest";
import { type Busy, daySlots, freeSlots, type Grid, gridSlots, type Window } from "./slots.js";

/**
 * The fast grid (one reading of the zone per range, arithmetic per slot)
 * against a plain one: every local time turned into an instant by luxon on
 * its own, busy time scanned slot by slot. Random zones, windows, durations
 * and days, with the DST change days of each zone drawn often.
 */

const ZONES = [
  "UTC",
  "America/New_York",
  "America/Sao_Paulo",
  "America/Santiago",
  "America/Havana",
  "Europe/London",
  "Europe/Lisbon",
  "Australia/Sydney",
  "Australia/Lord_Howe",
  "Pacific/Chatham",
  "Antarctica/Troll",
  "Asia/Kathmandu",
  "Africa/Casablanca",
];
const MIN = 60_000;
const hhmm = (m: number) =>
  `${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`;

/** The local days (and the day before) on which the zone changed its offset, 2018..2028, found by luxon. */
function changeDays(zone: string): string[] {
  const days: string[] = [];
  let d = DateTime.fromISO("2018-01-01T12:00:00", { zone });
  let offset = d.offset;
  for (; d.year < 2029; d = d.plus({ days: 1 })) {
    if (d.offset !== offset) days.push(d.minus({ days: 1 }).toISODate()!, d.toISODate()!);
    offset = d.offset;
  }
  return days;
}
const CHANGES = new Map(ZONES.map((z) => [z, changeDays(z)]));

/** The instant at which `day` shows `minute` in `zone`, the first of two; undefined when skipped. */
function plainInstant(day: string, minute: number, zone: string): number | undefined {
  const [year, month, date] = day.split("-").map(Number) as [number, number, number];
  const hour = Math.floor(minute / 60);
  const min = minute % 60;
  const dt = DateTime.fromObject({ year, month, day: date, hour, minute: min }, { zone });
  const shows = (t: DateTime) => t.day === date && t.hour === hour && t.minute === min;
  if (!shows(dt)) return undefined;
  // An earlier instant showing it has another offset, one the zone had in the hours before.
  let first = dt.toMillis();
  if (dt.minus({ minutes: 240 }).offset === dt.offset) return first;
  for (let back = 15; back <= 240; back += 15) {
    const offset = dt.minus({ minutes: back }).offset;
    const at = dt.toMillis() + (dt.offset - offset) * MIN;
    if (at < first && shows(DateTime.fromMillis(at, { zone }))) first = at;
  }
  return first;
}

/** Where a window ends: a skipped time is read with the offset before the jump (luxon's reading). */
function plainEnd(day: string, minute: number, zone: string): number {
  if (minute === 1440)
    return plainEnd(DateTime.fromISO(day, { zone: "UTC" }).plus({ days: 1 }).toISODate()!, 0, zone);
  const exact = plainInstant(day, minute, zone);
  if (exact !== undefined) return exact;
  const [year, month, date] = day.split("-").map(Number) as [number, number, number];
  return DateTime.fromObject(
    { year, month, day: date, hour: Math.floor(minute / 60), minute: minute % 60 },
    { zone },
  ).toMillis();
}

function plainDay(grid: Grid, day: string) {
  const weekday = DateTime.fromISO(day, { zone: "UTC" }).weekday % 7;
  const seen = new Map<number, { start: number; end: number; windowEnd: number }>();
  for (const w of grid.availability) {
    if (w.weekday !== weekday) continue;
    const [sh, sm] = w.start.split(":").map(Number) as [number, number];
    const [eh, em] = w.end.split(":").map(Number) as [number, number];
    const windowEnd = plainEnd(day, eh * 60 + em, grid.timezone);
    for (let m = sh * 60 + sm; m < eh * 60 + em; m += grid.slotIntervalMin) {
      const start = plainInstant(day, m, grid.timezone);
      if (start === undefined || start + grid.durationMin * MIN > windowEnd) continue;
      const other = seen.get(start);
      if (!other || other.windowEnd < windowEnd)
        seen.set(start, { start, end: start + grid.durationMin * MIN, windowEnd });
    }
  }
  return [...seen.values()].sort((a, b) => a.start - b.start);
}

const windowArb = (weekday: number) =>
  fc.tuple(fc.integer({ min: 0, max: 287 }), fc.integer({ min: 1, max: 288 })).map(([a, b]): Window => {
    const start = Math.min(a, b) * 5;
    const end = Math.max(a + 1, b) * 5;
    return { weekday, start: hhmm(start), end: end === 1440 ? "24:00" : hhmm(end) };
  });

const caseArb = fc
  .record({
    zone: fc.constantFrom(...ZONES),
    pick: fc.nat(),
    changeDay: fc.boolean(),
    randomDay: fc.date({
      noInvalidDate: true,
      min: new Date("2018-01-02T00:00:00Z"),
      max: new Date("2028-12-30T00:00:00Z"),
    }),
    durationMin: fc.integer({ min: 1, max: 48 }).map((n) => n * 5),
    slotIntervalMin: fc.integer({ min: 1, max: 24 }).map((n) => n * 5),
    windows: fc.integer({ min: 1, max: 3 }),
    seed: fc.array(fc.tuple(fc.integer({ min: 0, max: 287 }), fc.integer({ min: 1, max: 288 })), {
      minLength: 3,
      maxLength: 3,
    }),
  })
  .map((c) => {
    const changes = CHANGES.get(c.zone)!;
    const day =
      c.changeDay && changes.length > 0
        ? changes[c.pick % changes.length]!
        : c.randomDay.toISOString().slice(0, 10);
    const weekday = new Date(`${day}T00:00:00Z`).getUTCDay();
    const availability = c.seed.slice(0, c.windows).map(([a, b]) => {
      const start = Math.min(a, b) * 5;
      const end = Math.max(a + 1, b) * 5;
      return { weekday, start: hhmm(start), end: end === 1440 ? "24:00" : hhmm(end) };
    });
    const grid: Grid = {
      timezone: c.zone,
      durationMin: c.durationMin,
      slotIntervalMin: c.slotIntervalMin,
      availability,
    };
    return { grid, day };
  });

describe("the fast grid equals the plain one (docs/api/meetings.md §GET /calendars/{id}/slots: DST days, skipped and repeated local times)", () => {
  it("docs/api/meetings.md §GET /calendars/{id}/slots: one day's slots, any zone, any windows, DST change days included", () => {
    fc.assert(
      fc.property(caseArb, ({ grid, day }) => {
        const fast = daySlots(grid, day).map((s) => [
          s.startAt.getTime(),
          s.endAt.getTime(),
          s.windowEndAt.getTime(),
        ]);
        const plain = plainDay(grid, day).map((s) => [s.start, s.end, s.windowEnd]);
        expect(fast).toEqual(plain);
      }),
      { numRuns: 300 },
    );
  });

  it("docs/api/meetings.md §GET /calendars/{id}/slots: a range of days is the days' slots, from and to cut on instants", () => {
    fc.assert(
      fc.property(
        caseArb,
        fc.integer({ min: -36, max: 36 }),
        fc.integer({ min: 1, max: 8 * 24 }),
        windowArb(0),
        ({ grid, day }, startHours, hours, extra) => {
          // Every weekday open, so a range crosses open days.
          const open: Grid = {
            ...grid,
            availability: [0, 1, 2, 3, 4, 5, 6].flatMap((weekday) => [
              ...grid.availability.map((w) => ({ ...w, weekday })),
              { ...extra, weekday },
            ]),
          };
          const from = Date.parse(`${day}T00:00:00Z`) + startHours * 3_600_000;
          const to = from + hours * 3_600_000;
          const plain: number[] = [];
          const first = DateTime.fromMillis(from, { zone: grid.timezone }).startOf("day");
          const last = DateTime.fromMillis(to, { zone: grid.timezone }).toISODate()!;
          for (let d = first; d.toISODate()! <= last; d = d.plus({ days: 1 }))
            for (const s of plainDay(open, d.toISODate()!))
              if (s.start >= from && s.start < to) plain.push(s.start);
          expect(gridSlots(open, new Date(from), new Date(to)).map((s) => s.startAt.getTime())).toEqual(
            plain,
          );
        },
      ),
      { numRuns: 40 },
    );
  });

  it("docs/api/meetings.md §GET /calendars/{id}/slots: free slots and round-robin equal a scan of every busy meeting for every slot", () => {
    fc.assert(
      fc.property(
        caseArb,
        fc.array(
          fc.record({
            who: fc.integer({ min: 0, max: 3 }),
            startMin: fc.integer({ min: -600, max: 3 * 1440 }),
            lengthMin: fc.integer({ min: 5, max: 300 }),
          }),
          { maxLength: 40 },
        ),
        fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 12 }),
        ({ grid, day }, meetings, counts) => {
          const assigneeUserIds = ["a", "b", "c", "d"];
          const base = Date.parse(`${day}T00:00:00Z`);
          const list = meetings.map((m) => ({
            assigneeUserId: assigneeUserIds[m.who]!,
            startAt: new Date(base + m.startMin * MIN),
            endAt: new Date(base + (m.startMin + m.lengthMin) * MIN),
          }));
          const busy = new Map<string, Busy>();
          // In no particular order: the sweep sorts what the database did not.
          for (const m of list) {
            const b = busy.get(m.assigneeUserId) ?? { starts: [], ends: [] };
            b.starts.push(m.startAt.getTime());
            b.ends.push(m.endAt.getTime());
            busy.set(m.assigneeUserId, b);
          }
          const perAssigneeDay = new Map(counts.map((n, i) => [`${assigneeUserIds[i % 4]} ${day}`, n]));
          const cal = { ...grid, dailyCap: 100, assigneeUserIds };
          const range = { from: new Date(base - 86_400_000), to: new Date(base + 2 * 86_400_000) };
          const fast = freeSlots(cal, range, { perDay: new Map(), perAssigneeDay, busy }).map((s) => [
            s.startAt.getTime(),
            s.assigneeUserId,
          ]);
          const plain = gridSlots(cal, range.from, range.to).flatMap((s) => {
            let pick: string | undefined;
            let fewest = Infinity;
            for (const a of assigneeUserIds) {
              const taken = list.some(
                (b) => b.assigneeUserId === a && b.startAt < s.endAt && s.startAt < b.endAt,
              );
              const n = perAssigneeDay.get(`${a} ${s.day}`) ?? 0;
              if (!taken && n < fewest) {
                fewest = n;
                pick = a;
              }
            }
            return pick ? [[s.startAt.getTime(), pick]] : [];
          });
          expect(fast).toEqual(plain);
        },
      ),
      { numRuns: 200 },
    );
  });
});
