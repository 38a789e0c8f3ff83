import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { newWorkspace, type Workspace, waitFor } from "../helpers.js";
import { contact } from "./crm-fixtures.js";
import { ahead, book, calendar } from "./scheduling-fixtures.js";

/*
 * docs/api/contacts.md §POST /contacts/{id}/erase, a booking racing the erasure: crm answers the booking's check
 * before the contact is erased, and the booking's transaction meets scheduling's erasure. Each side is held
 * still at a chosen point by a transaction of the test on scheduling's database (a row it locks), so the
 * two meet in one order or the other every run; whichever order, no meeting keeps the contact's name.
 */

let db: postgres.Sql;
let ws: Workspace;
beforeAll(async () => {
  const url = new URL(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
  url.pathname = `/funil_${inject("funilEnv")}_scheduling`;
  db = postgres(url.toString(), { max: 4, onnotice: () => {} });
  ws = await newWorkspace();
});
afterAll(async () => {
  await db.end({ timeout: 5 });
});

/** A transaction on scheduling's database that runs `take` and stays open until `commit()`; `pid` is its session's. */
async function holdOpen(take: (tx: postgres.TransactionSql) => Promise<unknown>) {
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let held!: (pid: number) => void;
  const taken = new Promise<number>((r) => {
    held = r;
  });
  const done = db.begin(async (tx) => {
    const [me] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
    await take(tx);
    held(me!.pid);
    await released;
  });
  // `done` settles first only when `take` failed: its error is thrown here.
  const pid = await Promise.race([taken, done.then(() => 0)]);
  return {
    pid,
    commit: async () => {
      release();
      await done;
    },
  };
}

/**
 * The session of scheduling's database that waits for a lock held by session `pid` (an advisory lock
 * only, when `advisory`), or undefined.
 */
async function waiterOf(pid: number, advisory = false) {
  const [row] = await db<{ pid: number }[]>`
    select pid from pg_stat_activity
    where wait_event_type = 'Lock' and ${pid}::int = any(pg_blocking_pids(pid))
      and (not ${advisory} or wait_event = 'advisory')`;
  return row?.pid;
}

const erasedAtScheduling = async (contactId: string) =>
  (await db`select 1 from erased_contacts where workspace_id = ${ws.id} and contact_id = ${contactId}`)
    .length > 0;

/** A flag set once `p` has settled, whatever its outcome. */
function settledFlag(p: Promise<unknown>) {
  const flag = { settled: false };
  p.then(
    () => {
      flag.settled = true;
    },
    () => {
      flag.settled = true;
    },
  );
  return flag;
}

/** Every meeting of the contact as stored, with what an erasure empties. */
const storedMeetings = (contactId: string) => db`
  select id, contact_name as "contactName", title, location from appointments
  where workspace_id = ${ws.id} and contact_id = ${contactId} order by start_at`;

describe("a booking racing its contact's erasure (docs/api/contacts.md §POST /contacts/{id}/erase)", () => {
  it("docs/api/contacts.md §POST /contacts/{id}/erase: a booking that reaches scheduling while the erasure is being applied waits for it, then is 422 invalid_reference on contactId, remembered under its key; no meeting keeps the name", async () => {
    const name = `Rita Corrida ${Date.now().toString(36)}`;
    const [cal, c] = await Promise.all([calendar(ws), contact(ws, { name })]);
    const base = { calendarId: cal.id, contactId: c.id, assigneeUserId: cal.assigneeUserIds[0] };
    const first = await book(ws, { ...base, startAt: ahead(3, "09:00"), title: `Demo for ${name}` });
    expect(first.status, JSON.stringify(first.body)).toBe(201);

    // The erasure is to be held on the first meeting's row, after it took the contact's lock.
    const rowHeld = await holdOpen(
      (tx) => tx`select 1 from appointments where id = ${first.body.id} for update`,
    );
    // The booking is to be held on its key's claim, after crm's answer: an expired claim of the same key
    // not yet committed, which its transaction takes over once it is.
    const key = `race-${Date.now().toString(36)}`;
    const keyHeld = await holdOpen(
      (tx) => tx`
        insert into idempotency_keys (workspace_id, key, fingerprint, status, created_at)
        values (${ws.id}, ${key}, 'expired', 'in_flight', now() - interval '2 days')`,
    );
    const booking = book(
      ws,
      { ...base, startAt: ahead(3, "11:00"), title: `Follow-up for ${name}` },
      { "idempotency-key": key },
    );
    const answered = settledFlag(booking);
    await waitFor(() => waiterOf(keyHeld.pid), 8_000);
    // crm found the contact; now it is erased there, and scheduling's erasure starts and is held.
    expect((await ws.call("POST", `/contacts/${c.id}/erase`)).status).toBe(200);
    const erasure = await waitFor(() => waiterOf(rowHeld.pid), 8_000);

    // The booking goes on into its transaction: it waits for the erasure rather than book the name.
    await keyHeld.commit();
    await waitFor(async () => answered.settled || (await waiterOf(erasure, true)), 8_000);
    expect(answered.settled).toBe(false);
    await rowHeld.commit();
    const answer = await booking;
    expect(answer.status, JSON.stringify(answer.body)).toBe(422);
    expect(answer.body.error).toMatchObject({
      code: "invalid_reference",
      details: [{ path: "contactId", message: `no contact ${c.id} in this workspace` }],
    });
    const replay = await book(
      ws,
      { ...base, startAt: ahead(3, "11:00"), title: `Follow-up for ${name}` },
      { "idempotency-key": key },
    );
    expect(replay.status).toBe(422);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");

    expect(await storedMeetings(c.id)).toEqual([
      { id: first.body.id, contactName: null, title: null, location: null },
    ]);
  }, 60_000);

  it("docs/api/contacts.md §POST /contacts/{id}/erase: an erasure that reaches scheduling while a booking of the contact is being written waits for it, then redacts the new meeting too", async () => {
    const name = `Rui Corrida ${Date.now().toString(36)}`;
    const [cal, c] = await Promise.all([calendar(ws), contact(ws, { name })]);
    const base = { calendarId: cal.id, contactId: c.id, assigneeUserId: cal.assigneeUserIds[0] };
    const first = await book(ws, { ...base, startAt: ahead(4, "09:00") });
    expect(first.status, JSON.stringify(first.body)).toBe(201);

    // The booking is to be held on its day's count, the last row its transaction writes.
    const dayHeld = await holdOpen(
      (tx) => tx`
        select 1 from day_counts where calendar_id = ${cal.id} and local_day = ${first.body.startAt.slice(0, 10)}
        for update`,
    );
    const booking = book(ws, {
      ...base,
      startAt: ahead(4, "10:00"),
      title: `Demo for ${name}`,
      location: `${name}'s office`,
    });
    const booker = await waitFor(() => waiterOf(dayHeld.pid), 8_000);

    // crm found the contact; now it is erased there, and scheduling's erasure waits for the booking
    // (or, were the two not serialized, would finish now without seeing the meeting in flight).
    expect((await ws.call("POST", `/contacts/${c.id}/erase`)).status).toBe(200);
    await waitFor(async () => (await erasedAtScheduling(c.id)) || (await waiterOf(booker, true)), 8_000);
    expect(await erasedAtScheduling(c.id)).toBe(false);
    await dayHeld.commit();
    const answer = await booking;
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);

    await waitFor(() => erasedAtScheduling(c.id), 8_000);
    expect(await storedMeetings(c.id)).toEqual([
      { id: first.body.id, contactName: null, title: null, location: null },
      { id: answer.body.id, contactName: null, title: null, location: null },
    ]);
    const read = await ws.call("GET", `/appointments/${answer.body.id}`);
    expect(read.body).toMatchObject({ contactId: c.id, contactName: null, title: null, location: null });
  }, 60_000);
});
