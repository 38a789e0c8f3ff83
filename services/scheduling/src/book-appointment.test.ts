import { create, type MessageShape, toJson } from "@bufbuild/protobuf";
import { Code, type ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { type Clock, createLogger, naming } from "@funil/config";
import { ListAppointmentsResponseSchema, SERVICES } from "@funil/contracts";
import {
  CallInTransactionError,
  migrate,
  openDatabase,
  type Sql,
  withIdempotency,
  writeEvent,
} from "@funil/db";
import { openRedis } from "@funil/db/redis";
import { clientsOf, describeError, encodedBytesOf, errorInterceptor, REPLAYED_HEADER } from "@funil/rpc";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { crmDirectory } from "./crm.js";
import { appointmentService } from "./rpc/appointments.js";
import { routes } from "./rpc/routes.js";
import { appointmentWire } from "./rpc/wire.js";
import { migrations, schedulingDeps } from "./server.js";
import { erasureStore } from "./store/erasures.js";

/**
 * The booking use case (book-appointment.ts) in-process, like crm's handler tests: scheduling's
 * Connect routes on a router transport over the real test database and the real Redis, with the test
 * stack's crm behind them (or a crm that is down). The run refuses any RPC or Redis call made while a
 * PostgreSQL transaction is open (FUNIL_CHECK_TRANSACTIONS, vitest.config.ts): every booking here
 * goes through that check.
 */
const names = naming(`${process.env.FUNIL_TEST_ENV}_booking`);
const prefix = `funil:${process.env.FUNIL_TEST_ENV}_booking:scheduling:`;
let sql: Sql;
let redis: Redis;
const now = new Date("2030-03-04T09:00:00.000Z");
const clock: Clock = { now: () => now };
const log = createLogger("scheduling", "silent");
type Clients = {
  [K in keyof typeof SERVICES.scheduling]: ReturnType<typeof createClient<(typeof SERVICES.scheduling)[K]>>;
};
/** scheduling with the stack's crm, and with a crm that refuses every connection. */
let scheduling: Clients;
let crmDown: Clients;
const crm = () => clientsOf(SERVICES.crm, inject("crmUrl"));

function depsOf(crmUrl: string) {
  return schedulingDeps(
    {
      sql,
      clock,
      emit: async (tx, event) => {
        await writeEvent(tx, (type) => names.subject(`events.${type}`), event);
      },
    },
    { client: redis, prefix },
    crmDirectory(clientsOf(SERVICES.crm, crmUrl, 2_000)),
  );
}

function inProcess(crmUrl: string): Clients {
  const transport = createRouterTransport(routes(depsOf(crmUrl)), {
    router: { interceptors: [errorInterceptor(log)] },
  });
  return Object.fromEntries(
    Object.entries(SERVICES.scheduling).map(([name, service]) => [name, createClient(service, transport)]),
  ) as Clients;
}

beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    names.database("scheduling"),
  );
  await migrate(sql, migrations);
  redis = openRedis(
    process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    log,
    "bookings under PostgreSQL alone",
  );
  scheduling = inProcess(inject("crmUrl"));
  // Port 1: nothing listens there, every connection is refused.
  crmDown = inProcess("http://127.0.0.1:1");
});
afterAll(async () => {
  redis?.disconnect();
  await sql?.end({ timeout: 5 });
});

const failure = (err: unknown) => ({ grpc: (err as ConnectError).code, ...describeError(err) });
const caught = (p: Promise<unknown>) => p.then(() => undefined, failure);
const outcome = (p: Promise<unknown>) =>
  p.then(
    () => "booked",
    (err) => describeError(err).code,
  );
const at = (hhmm: string) => `2030-03-06T${hhmm}:00.000Z`;

let n = 0;
/** A workspace with two members, a contact and a calendar open all day (UTC), cap 3. */
async function workspace() {
  const workspaceId = `ws_book${Date.now()}_${++n}`;
  const members: string[] = [];
  for (const i of [0, 1])
    members.push(
      (
        await crm().members.createMember({
          workspaceId,
          name: `M${i}`,
          email: `m${i}.${workspaceId}@booking.test`,
          role: "atendente",
        })
      ).member!.id,
    );
  const contactId = (
    await crm().contacts.upsertContact({
      workspaceId,
      fields: { name: "Ana", email: `ana.${workspaceId}@t.test` },
    })
  ).contact!.id;
  const calendar = (
    await scheduling.calendars.createCalendar({
      workspaceId,
      key: "demo",
      name: "Demo",
      durationMin: 30,
      dailyCap: 3,
      timezone: "UTC",
      assigneeUserIds: members,
      availability: [0, 1, 2, 3, 4, 5, 6].map((weekday) => ({ weekday, start: "00:00", end: "24:00" })),
    })
  ).calendar!;
  const input = (hhmm: string, assignee = 0) => ({
    calendarId: calendar.id,
    contactId,
    startAt: at(hhmm),
    assigneeUserId: members[assignee]!,
  });
  const listed = async () =>
    (await scheduling.appointments.listAppointments({ workspaceId, limit: 50 })).data;
  return { workspaceId, members, contactId, calendar, input, listed };
}

describe("booking (docs/api/meetings.md §POST /appointments)", () => {
  it("books: the meeting carries crm's contact name and the slot's end, and is read back", async () => {
    const w = await workspace();
    const { appointment } = await scheduling.appointments.createAppointment({
      workspaceId: w.workspaceId,
      input: { ...w.input("10:00"), title: "Demo" },
    });
    expect(appointment).toMatchObject({
      contactId: w.contactId,
      contactName: "Ana",
      startAt: at("10:00"),
      endAt: at("10:30"),
      status: "scheduled",
      calendarKey: "demo",
      title: "Demo",
    });
    const read = await scheduling.appointments.getAppointment({
      workspaceId: w.workspaceId,
      id: appointment!.id,
    });
    expect(read.appointment).toEqual(appointment);
  });

  it("double booking refused: the assignee's occupied time is 409 slot_taken, one of many at once gets it", async () => {
    const w = await workspace();
    await scheduling.appointments.createAppointment({ workspaceId: w.workspaceId, input: w.input("10:00") });
    expect(
      await caught(
        scheduling.appointments.createAppointment({ workspaceId: w.workspaceId, input: w.input("10:00") }),
      ),
    ).toMatchObject({ grpc: Code.AlreadyExists, code: "slot_taken", status: 409 });
    const storm = await Promise.all(
      Array.from({ length: 6 }, () =>
        outcome(
          scheduling.appointments.createAppointment({
            workspaceId: w.workspaceId,
            input: w.input("11:00", 1),
          }),
        ),
      ),
    );
    expect(storm.filter((o) => o === "booked")).toHaveLength(1);
    expect(storm.filter((o) => o !== "booked").every((o) => o === "slot_taken")).toBe(true);
    expect(await w.listed()).toHaveLength(2);
  });

  it("a references' failure names each: calendar, contact, opportunity, assignee (422 invalid_reference)", async () => {
    const w = await workspace();
    const input = { ...w.input("10:00"), contactId: "ct_missing", opportunityId: "opp_missing" };
    expect(
      await caught(scheduling.appointments.createAppointment({ workspaceId: w.workspaceId, input })),
    ).toMatchObject({
      code: "invalid_reference",
      details: [
        { path: "contactId", message: "no contact ct_missing in this workspace" },
        { path: "opportunityId", message: "no opportunity opp_missing in this workspace" },
      ],
    });
  });
});

describe("meeting pages written from raw rows (packages/rpc row-pages.ts)", () => {
  it("GET /appointments: each page is the object path's page, written as bytes", async () => {
    const w = await workspace();
    for (const [i, hhmm] of ["10:00", "11:00", "12:00"].entries())
      await scheduling.appointments.createAppointment({
        workspaceId: w.workspaceId,
        input: { ...w.input(hhmm), title: `Demo "${i}" {ç} \\ 🙂`, location: i ? "Sala" : undefined },
      });
    const deps = depsOf(inject("crmUrl"));
    const impl = appointmentService(deps);
    const pageOf = async (cursor?: string) => {
      const page = await impl.listAppointments(
        { workspaceId: w.workspaceId, limit: 2, cursor } as never,
        {} as never,
      );
      expect(encodedBytesOf(page)).toBeDefined();
      return page as MessageShape<typeof ListAppointmentsResponseSchema>;
    };
    const first = await pageOf();
    const second = await pageOf(first.nextCursor);
    expect(second.nextCursor).toBeUndefined();
    const objects = await deps.appointments.list(w.workspaceId, { status: "scheduled" }, 10);
    const schema = ListAppointmentsResponseSchema;
    expect(toJson(schema, create(schema, { data: [...first.data, ...second.data] }))).toEqual(
      toJson(schema, create(schema, { data: objects.map((r) => appointmentWire.proto(r)) })),
    );
  });
});

describe("slots paged by the service (docs/api/conventions.md §Lists and pagination)", () => {
  it("docs/api/conventions.md §Lists and pagination: ListSlots gives limit slots after afterStartAt, or from afterIndex when no slot starts there any more; limit 0 is the whole list; a negative limit is invalid_argument", async () => {
    const w = await workspace();
    const range = { workspaceId: w.workspaceId, id: w.calendar.id, from: at("09:00"), to: at("12:00") };
    const whole = await scheduling.calendars.listSlots(range);
    expect(whole.data.map((s) => s.startAt.slice(11, 16))).toEqual([
      "09:00",
      "09:30",
      "10:00",
      "10:30",
      "11:00",
      "11:30",
    ]);
    expect(whole).toMatchObject({ start: 0, more: false });
    const first = await scheduling.calendars.listSlots({ ...range, limit: 4 });
    expect(first.data).toEqual(whole.data.slice(0, 4));
    expect(first).toMatchObject({ start: 0, more: true });
    const second = await scheduling.calendars.listSlots({
      ...range,
      limit: 4,
      afterStartAt: at("10:30"),
      afterIndex: 3,
    });
    expect(second.data).toEqual(whole.data.slice(4));
    expect(second).toMatchObject({ start: 4, more: false });
    // Both assignees booked at 10:30: that slot is gone, the page starts where it stood.
    for (const assignee of [0, 1])
      await scheduling.appointments.createAppointment({
        workspaceId: w.workspaceId,
        input: w.input("10:30", assignee),
      });
    const after = await scheduling.calendars.listSlots({
      ...range,
      limit: 4,
      afterStartAt: at("10:30"),
      afterIndex: 3,
    });
    expect(after.data.map((s) => s.startAt.slice(11, 16))).toEqual(["11:00", "11:30"]);
    expect(after).toMatchObject({ start: 3, more: false });
    expect(await caught(scheduling.calendars.listSlots({ ...range, limit: -1 }))).toMatchObject({
      grpc: Code.InvalidArgument,
      code: "validation_failed",
    });
  });
});

describe("booking under an Idempotency-Key (docs/api/conventions.md §Idempotency-Key)", () => {
  it("replay: the same key and body answer the first meeting, marked; another body is 422 idempotency_key_reused", async () => {
    const w = await workspace();
    const seen: string[] = [];
    const onHeader = (h: Headers) => seen.push(h.get(REPLAYED_HEADER) ?? "fresh");
    const send = (hhmm: string) =>
      scheduling.appointments.createAppointment(
        { workspaceId: w.workspaceId, input: w.input(hhmm), idempotencyKey: "k1" },
        { onHeader },
      );
    const first = await send("10:00");
    const again = await send("10:00");
    expect(again.appointment).toEqual(first.appointment);
    expect(seen).toEqual(["fresh", "true"]);
    expect(await caught(send("10:30"))).toMatchObject({ code: "idempotency_key_reused", status: 422 });
    expect(await w.listed()).toHaveLength(1);
  });

  it("a checked failure is remembered and replayed; the same key sent at once books one meeting, the others 409 or replay", async () => {
    const w = await workspace();
    const missing = { ...w.input("10:00"), contactId: "ct_missing" };
    const send = (input: typeof missing, key: string) =>
      scheduling.appointments.createAppointment({ workspaceId: w.workspaceId, input, idempotencyKey: key });
    const first = await caught(send(missing, "k-missing"));
    expect(first).toMatchObject({ code: "invalid_reference" });
    expect(await caught(send(missing, "k-missing"))).toMatchObject({
      code: "invalid_reference",
      replayed: true,
    });

    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        send(w.input("11:00"), "k-race").then(
          (r) => r.appointment!.id,
          (err) => describeError(err).code,
        ),
      ),
    );
    const ids = new Set(answers.filter((a) => a.startsWith("apt")));
    expect(ids.size, answers.join()).toBe(1);
    expect(answers.filter((a) => !a.startsWith("apt")).every((a) => a === "idempotency_key_in_use")).toBe(
      true,
    );
    expect(await w.listed()).toHaveLength(1);
  });
});

describe("crm unavailable (docs/api/conventions.md §Outages and retries)", () => {
  it("a booking is 503 unavailable and writes nothing; under a key the failure is not remembered: the retry books", async () => {
    const w = await workspace();
    expect(
      await caught(
        crmDown.appointments.createAppointment({ workspaceId: w.workspaceId, input: w.input("10:00") }),
      ),
    ).toMatchObject({ grpc: Code.Unavailable, code: "unavailable", status: 503 });
    const keyed = { workspaceId: w.workspaceId, input: w.input("10:00"), idempotencyKey: "k-down" };
    expect(await caught(crmDown.appointments.createAppointment(keyed))).toMatchObject({
      code: "unavailable",
    });
    expect(await w.listed()).toHaveLength(0);
    const retried = await scheduling.appointments.createAppointment(keyed);
    expect(retried.appointment).toMatchObject({ status: "scheduled", contactName: "Ana" });
  });
});

describe("a contact erased after crm answered for it (docs/api/contacts.md §POST /contacts/{id}/erase)", () => {
  it("docs/api/contacts.md §POST /contacts/{id}/erase: once scheduling applied the erasure, a booking whose crm check still found the contact is 422 invalid_reference on contactId, under a key too (remembered); nothing is booked", async () => {
    const w = await workspace();
    await scheduling.appointments.createAppointment({
      workspaceId: w.workspaceId,
      input: { ...w.input("09:00"), title: "Demo for Ana" },
    });
    // crm is not told: it still answers for the contact, as it did for a booking just before its erasure.
    const erased = await erasureStore(sql).erase({
      eventId: `evt_${w.workspaceId}`,
      workspaceId: w.workspaceId,
      contactId: w.contactId,
      erasedAt: now,
    });
    expect(erased).toBe(true);
    const atCrm = await crm().contacts.getContact({ workspaceId: w.workspaceId, id: w.contactId });
    expect(atCrm.contact?.name).toBe("Ana");

    const refused = {
      code: "invalid_reference",
      status: 422,
      details: [{ path: "contactId", message: `no contact ${w.contactId} in this workspace` }],
    };
    const book = (idempotencyKey?: string) =>
      caught(
        scheduling.appointments.createAppointment({
          workspaceId: w.workspaceId,
          input: { ...w.input("10:00"), title: "Demo for Ana" },
          idempotencyKey,
        }),
      );
    expect(await book()).toMatchObject(refused);
    expect(await book("k-erased")).toMatchObject(refused);
    expect(await book("k-erased")).toMatchObject({ ...refused, replayed: true });
    const rows = await sql`
      select contact_name, title from appointments where workspace_id = ${w.workspaceId}`;
    expect(rows).toEqual([{ contactName: null, title: null }]);
  });
});

describe("Redis lock held (store/guard.ts)", () => {
  it("while another attempt holds the assignee's time, a booking is 409 slot_taken at once; once it lets go, the time books", async () => {
    const w = await workspace();
    const lock = `${prefix}time:${w.workspaceId}:${w.members[0]}:${Date.parse(at("10:00"))}`;
    await redis.set(lock, "another-attempt", "PX", 5000);
    expect(
      await caught(
        scheduling.appointments.createAppointment({ workspaceId: w.workspaceId, input: w.input("10:00") }),
      ),
    ).toMatchObject({
      code: "slot_taken",
      message: "the assignee's time is being booked by another request",
    });
    expect(await w.listed()).toHaveLength(0);
    // The other assignee's time is not held.
    expect(
      await outcome(
        scheduling.appointments.createAppointment({ workspaceId: w.workspaceId, input: w.input("10:00", 1) }),
      ),
    ).toBe("booked");
    await redis.del(lock);
    expect(
      await outcome(
        scheduling.appointments.createAppointment({ workspaceId: w.workspaceId, input: w.input("10:00") }),
      ),
    ).toBe("booked");
    // The hold is released with the booking: nothing of it stays in Redis.
    expect(await redis.exists(lock)).toBe(0);
  });
});

describe("Idempotency-Key held in Redis (docs/api/conventions.md §Idempotency-Key)", () => {
  it("while its first request is being checked, a copy is 409 idempotency_key_in_use at once, not remembered; then it books", async () => {
    const w = await workspace();
    const held = `${prefix}idem:${w.workspaceId}:k-held`;
    await redis.set(held, "the-first-request", "PX", 5000);
    const keyed = { workspaceId: w.workspaceId, input: w.input("10:00"), idempotencyKey: "k-held" };
    expect(await caught(scheduling.appointments.createAppointment(keyed))).toMatchObject({
      grpc: Code.Aborted,
      code: "idempotency_key_in_use",
      status: 409,
    });
    await redis.del(held);
    const booked = await scheduling.appointments.createAppointment(keyed);
    expect(booked.appointment).toMatchObject({ status: "scheduled" });
    // Released with the answer; the next copy is a replay, answered before the key is looked for in Redis.
    expect(await redis.exists(held)).toBe(0);
    await redis.set(held, "another", "PX", 5000);
    expect((await scheduling.appointments.createAppointment(keyed)).appointment).toEqual(booked.appointment);
    await redis.del(held);
  });
});

describe("no call leaves the process while a transaction is open (docs/architecture.md §Rules that keep it real)", () => {
  it("an RPC to crm or a Redis command made inside a transaction is refused, naming the call", async () => {
    const directory = crmDirectory(clientsOf(SERVICES.crm, inject("crmUrl")));
    const inside = (call: () => Promise<unknown>) =>
      sql
        .begin(() => call())
        .then(
          () => undefined,
          (err) => err,
        );
    const rpc = await inside(() => directory.contact("ws_x", "ct_x"));
    expect(rpc).toBeInstanceOf(CallInTransactionError);
    expect(rpc.message).toMatch(
      /^RPC funil\.crm\.v1\.ContactService\/GetContact while a PostgreSQL transaction is open/,
    );
    const command = await inside(() => redis.get(`${prefix}probe`));
    expect(command).toBeInstanceOf(CallInTransactionError);
    expect(command.message).toMatch(/^Redis GET while a PostgreSQL transaction is open/);
    // Before and after a transaction, both are fine.
    await expect(directory.contact("ws_x", "ct_x")).resolves.toBeUndefined();
    await expect(redis.get(`${prefix}probe`)).resolves.toBeNull();
  });

  it("the shape booking had: crm asked inside the Idempotency-Key's transaction is refused", async () => {
    const directory = crmDirectory(clientsOf(SERVICES.crm, inject("crmUrl")));
    const request = { workspaceId: "ws_x", key: `k${Date.now()}`, fingerprint: "f" };
    const err = await withIdempotency(sql, request, { now, encode: (v) => v }, () =>
      directory.contact("ws_x", "ct_x"),
    ).catch((e) => e);
    expect(err).toBeInstanceOf(CallInTransactionError);
  });
});
