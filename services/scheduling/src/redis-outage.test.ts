import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { loadConfig, systemClock } from "@funil/config";
import { HealthService, SERVICES } from "@funil/contracts";
import { clientsOf, describeError, rpcClient } from "@funil/rpc";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { schedulingConfig } from "./config.js";
import { start } from "./server.js";

/**
 * Redis down never yields a 500, a double booking or a cap overrun (docs/operations.md §Faults):
 * the scheduling service runs in-process against a private redis-server that
 * the test stops and starts again, with the test stack's crm behind it.
 */
const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let redisPort: number;
let redisProcess: ChildProcess | undefined;
async function startRedis() {
  redisProcess = spawn("redis-server", ["--port", String(redisPort), "--save", "", "--appendonly", "no"], {
    stdio: "ignore",
  });
  const probe = new Redis(redisPort, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on("error", () => {});
  for (let i = 0; i < 50; i++) {
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch {
      await sleep(100);
    }
  }
  return probe;
}
async function stopRedis() {
  const p = redisProcess!;
  const exited = new Promise((r) => p.once("exit", r));
  p.kill("SIGKILL");
  await exited;
}

const FUNIL_ENV = `${process.env.FUNIL_TEST_ENV ?? "test"}_sched`;
let service: Awaited<ReturnType<typeof start>>;
let probe: Redis;
const crm = () => clientsOf(SERVICES.crm, inject("crmUrl"));
let scheduling: ReturnType<typeof clientsOf<typeof SERVICES.scheduling>>;

beforeAll(async () => {
  redisPort = await freePort();
  probe = await startRedis();
  service = await start(
    loadConfig(schedulingConfig, {
      ...process.env,
      FUNIL_ENV,
      SCHEDULING_PORT: "0",
      CRM_URL: inject("crmUrl"),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      LOG_LEVEL: "silent",
    }),
    systemClock,
  );
  scheduling = clientsOf(SERVICES.scheduling, `http://127.0.0.1:${service.port}`);
});
afterAll(async () => {
  probe?.disconnect();
  await service?.stop();
  if (redisProcess && redisProcess.exitCode === null) await stopRedis();
});

const day = (() => {
  const d = new Date(Date.now() + 3 * 86_400_000);
  return d.toISOString().slice(0, 10);
})();
const at = (hhmm: string) => `${day}T${hhmm}:00.000Z`;
const outcome = async (p: Promise<unknown>) => {
  try {
    await p;
    return "booked";
  } catch (err) {
    return describeError(err).code;
  }
};
/** What the gateway's /readyz and /metrics read: scheduling's HealthService. */
const redisUp = async () =>
  (await rpcClient(HealthService, `http://127.0.0.1:${service.port}`).check({})).dependencies.find(
    (d) => d.name === "redis",
  );

describe("booking with Redis down (docs/operations.md §Faults: PostgreSQL's guards alone)", () => {
  it("docs/api/meetings.md §POST /appointments: no double booking, no day above its cap, no 500 while Redis is down; counters rebuilt from PostgreSQL after its restart", async () => {
    const workspaceId = `ws_outage_${Date.now()}`;
    const members: string[] = [];
    for (let i = 0; i < 3; i++)
      members.push(
        (
          await crm().members.createMember({
            workspaceId,
            name: `M${i}`,
            email: `m${i}.${Date.now()}@outage.test`,
            role: "atendente",
          })
        ).member!.id,
      );
    const contactId = (
      await crm().contacts.upsertContact({
        workspaceId,
        fields: { name: "Out Age", phone: `+5511${Date.now() % 1e8}` },
      })
    ).contact!.id;
    const calendar = (
      await scheduling.calendars.createCalendar({
        workspaceId,
        key: "outage",
        name: "Outage",
        durationMin: 30,
        dailyCap: 4,
        timezone: "UTC",
        assigneeUserIds: members,
        availability: [0, 1, 2, 3, 4, 5, 6].map((weekday) => ({ weekday, start: "00:00", end: "24:00" })),
      })
    ).calendar!;
    const book = (hhmm: string, assignee = 0) =>
      scheduling.appointments.createAppointment({
        workspaceId,
        input: { calendarId: calendar.id, contactId, startAt: at(hhmm), assigneeUserId: members[assignee]! },
      });
    const dayKey = `funil:${FUNIL_ENV}:scheduling:day:${calendar.id}:${day}`;

    // Redis up: the counter follows the bookings.
    expect(await outcome(book("08:00"))).toBe("booked");
    expect(await outcome(book("08:30"))).toBe("booked");
    expect(await probe.get(dayKey)).toBe("2");
    expect(await redisUp()).toMatchObject({ ok: true, required: false });

    await stopRedis();
    const storm = await Promise.all(Array.from({ length: 10 }, () => outcome(book("09:00", 1))));
    expect(storm.filter((o) => o === "booked")).toHaveLength(1);
    expect(
      storm.filter((o) => o !== "booked").every((o) => o === "slot_taken"),
      storm.join(),
    ).toBe(true);
    const last = await Promise.all(
      ["10:00", "10:30", "11:00", "11:30", "12:00"].map((t, i) => outcome(book(t, i % 3))),
    );
    expect(last.filter((o) => o === "booked")).toHaveLength(1);
    expect(last.filter((o) => o !== "booked").every((o) => o === "daily_cap_reached")).toBe(true);
    expect(await redisUp()).toMatchObject({ ok: false, required: false });

    // Redis comes back empty: the counter is rebuilt from PostgreSQL's count, not from zero.
    probe.disconnect();
    probe = await startRedis();
    await sleep(2500);
    const listed = await scheduling.appointments.listAppointments({ workspaceId, limit: 10 });
    await scheduling.appointments.cancelAppointment({ workspaceId, id: listed.data[0]!.id });
    expect(await outcome(book("13:00"))).toBe("booked");
    expect(await probe.get(dayKey)).toBe("4");
    const again = await Promise.all(["13:30", "14:00", "14:30"].map((t, i) => outcome(book(t, i))));
    expect(again).toEqual(["daily_cap_reached", "daily_cap_reached", "daily_cap_reached"]);
    expect(await redisUp()).toMatchObject({ ok: true });
    const scheduled = await scheduling.appointments.listAppointments({ workspaceId, limit: 10 });
    expect(scheduled.data).toHaveLength(4);
  }, 60_000);

  it("docs/api/meetings.md §POST /appointments: a counter that drifted above the truth never refuses a place PostgreSQL still has", async () => {
    const workspaceId = `ws_drift_${Date.now()}`;
    const memberId = (
      await crm().members.createMember({
        workspaceId,
        name: "D",
        email: `d.${Date.now()}@drift.test`,
        role: "owner",
      })
    ).member!.id;
    const contactId = (
      await crm().contacts.upsertContact({ workspaceId, fields: { email: `c${Date.now()}@drift.test` } })
    ).contact!.id;
    const calendar = (
      await scheduling.calendars.createCalendar({
        workspaceId,
        key: "drift",
        name: "Drift",
        durationMin: 30,
        dailyCap: 2,
        timezone: "UTC",
        assigneeUserIds: [memberId],
        availability: [0, 1, 2, 3, 4, 5, 6].map((weekday) => ({ weekday, start: "00:00", end: "24:00" })),
      })
    ).calendar!;
    // As after a process killed between its reservation and its commit.
    await probe.set(`funil:${FUNIL_ENV}:scheduling:day:${calendar.id}:${day}`, "2");
    const book = (hhmm: string) =>
      outcome(
        scheduling.appointments.createAppointment({
          workspaceId,
          input: { calendarId: calendar.id, contactId, startAt: at(hhmm), assigneeUserId: memberId },
        }),
      );
    expect(await book("08:00")).toBe("booked");
    expect(await book("09:00")).toBe("booked");
    expect(await book("10:00")).toBe("daily_cap_reached");
  });
});
