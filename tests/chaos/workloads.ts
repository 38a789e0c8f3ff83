import { type Receiver, signedWith, startReceiver } from "../receiver.js";
/**
 * What the chaos run writes, one workload per service. Each one writes through the gateway the way a
 * careful client does (retrying with the same Idempotency-Key, or the same upsert, until it gets an
 * answer), remembers what was accepted, and afterwards checks that every accepted write is there once
 * and has exactly one event. A new service adds its workload to WORKLOADS.
 */
export interface Api {
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
  admin(method: string, path: string, body?: unknown): Promise<Answer>;
  /** Publishes on the run's INGEST or PLATFORM stream (docs/api/interactions.md §Ingest; docs/api/learners.md §Ingest), retrying until JetStream has stored it. */
  publish(subject: string, payload: unknown): Promise<void>;
}
export interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies
  body: any;
}
export interface EventEnvelope {
  id: string;
  type: string;
  workspaceId: string;
  occurredAt: string;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies
  data: any;
}
export interface Workload {
  name: string;
  /** Before the faults: what the writes need (through the admin API). */
  setup(api: Api, workspaceId: string): Promise<void>;
  /** Write number n; `send` retries until a final answer and returns it. */
  write(send: Send, n: number): Promise<void>;
  /** After the faults: every accepted write present once, with one *.created event each. */
  verify(api: Api, events: EventEnvelope[], check: Check): Promise<void>;
}
export type Send = (
  method: string,
  path: string,
  body: unknown,
  headers?: Record<string, string>,
) => Promise<Answer>;
export type Check = (ok: boolean, message: string) => void;

function crmWorkload(): Workload {
  const contacts = new Map<string, string>(); // phone → id
  const deals = new Map<string, string>(); // Idempotency-Key → id
  let pipelineId = "";
  let firstContact = "";
  const run = Math.random().toString(36).slice(2, 8);
  return {
    name: "crm: contacts and deals",
    async setup(api, workspaceId) {
      const p = await api.admin("POST", `/workspaces/${workspaceId}/pipelines`, {
        name: "Chaos",
        stages: [{ name: "New" }, { name: "Won" }],
      });
      if (p.status !== 201) throw new Error(`pipeline: ${p.status}`);
      pipelineId = p.body.id;
      const c = await api.call("POST", "/contacts", {
        name: "Anchor",
        phone: `+55 11 9${run.replace(/\D/g, "1")}0000`,
      });
      firstContact = c.body.id;
    },
    async write(send, n) {
      if (n % 2 === 0) {
        const phone = `+55 21 ${String(n).padStart(9, "0")}`;
        const res = await send("POST", "/contacts", { name: `Chaos ${n}`, phone });
        if (res.status === 200 || res.status === 201) contacts.set(phone, res.body.id);
      } else {
        const key = `chaos-${run}-${n}`;
        const res = await send(
          "POST",
          "/opportunities",
          { contactId: firstContact, pipelineId, title: `Deal ${n}` },
          { "idempotency-key": key },
        );
        if (res.status === 201) deals.set(key, res.body.id);
      }
    },
    async verify(api, events, check) {
      const created = (type: string) => {
        const count = new Map<string, number>();
        for (const e of events) if (e.type === type) count.set(e.data.id, (count.get(e.data.id) ?? 0) + 1);
        return count;
      };
      const contactEvents = created("contact.created");
      for (const [phone, id] of contacts) {
        const found = await api.call("GET", `/contacts?phone=${encodeURIComponent(phone)}`);
        check(
          found.status === 200 && found.body.data.length === 1 && found.body.data[0].id === id,
          `contact ${phone} is there once (${found.status}, ${found.body?.data?.length})`,
        );
        check(
          contactEvents.get(id) === 1,
          `contact ${id} has one contact.created event (${contactEvents.get(id)})`,
        );
      }
      const dealEvents = created("opportunity.created");
      const listed = new Set<string>();
      let cursor: string | null = null;
      do {
        const page: Answer = await api.call(
          "GET",
          `/opportunities?pipelineId=${pipelineId}&limit=500${cursor ? `&cursor=${cursor}` : ""}`,
        );
        for (const d of page.body.data) listed.add(d.id);
        cursor = page.body.nextCursor;
      } while (cursor);
      check(
        listed.size === deals.size,
        `one deal per Idempotency-Key (${listed.size} deals, ${deals.size} keys)`,
      );
      for (const [key, id] of deals) {
        check(listed.has(id), `the deal of ${key} is there`);
        check(
          dealEvents.get(id) === 1,
          `deal ${id} has one opportunity.created event (${dealEvents.get(id)})`,
        );
      }
      check(
        contacts.size > 0 && deals.size > 0,
        `writes were accepted (${contacts.size} contacts, ${deals.size} deals)`,
      );
    },
  };
}

/**
 * scheduling: bookings under an Idempotency-Key, two assignees, three writes per time (the third
 * collides with the first) and a daily cap below what is asked of a day. Afterwards: no assignee in
 * two meetings at once, no day above its cap, one meeting and one meeting.booked per accepted key.
 */
function schedulingWorkload(): Workload {
  const booked = new Map<string, string>(); // Idempotency-Key → id
  const run = Math.random().toString(36).slice(2, 8);
  const cap = 20;
  const base = Date.parse(new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10));
  let calendar = { id: "", key: "" };
  const assignees: string[] = [];
  let contactId = "";
  return {
    name: "scheduling: bookings",
    async setup(api, workspaceId) {
      for (const i of [1, 2]) {
        const m = await api.admin("POST", `/workspaces/${workspaceId}/members`, {
          name: `Closer ${i}`,
          email: `closer${i}.${run}@chaos.test`,
          role: "atendente",
        });
        if (m.status !== 201) throw new Error(`member: ${m.status}`);
        assignees.push(m.body.id);
      }
      const cal = await api.admin("POST", `/workspaces/${workspaceId}/calendars`, {
        key: `chaos-${run}`,
        name: "Chaos",
        durationMin: 30,
        dailyCap: cap,
        timezone: "UTC",
        assigneeUserIds: assignees,
        availability: [0, 1, 2, 3, 4, 5, 6].map((weekday) => ({ weekday, start: "00:00", end: "24:00" })),
      });
      if (cal.status !== 201) throw new Error(`calendar: ${cal.status}`);
      calendar = cal.body;
      const c = await api.call("POST", "/contacts", { name: "Booker", email: `booker.${run}@chaos.test` });
      contactId = c.body.id;
    },
    async write(send, n) {
      const key = `chaos-apt-${run}-${n}`;
      const slot = Math.floor(n / 3);
      const res = await send(
        "POST",
        "/appointments",
        {
          calendarId: calendar.id,
          contactId,
          startAt: new Date(base + slot * 30 * 60_000).toISOString(),
          assigneeUserId: assignees[n % 2],
        },
        { "idempotency-key": key },
      );
      if (res.status === 201) booked.set(key, res.body.id);
    },
    async verify(api, events, check) {
      const meetings: Array<{ id: string; startAt: string; endAt: string; assigneeUserId: string }> = [];
      let cursor: string | null = null;
      do {
        const path = `/appointments?calendarKey=${calendar.key}&limit=500${cursor ? `&cursor=${cursor}` : ""}`;
        let page: Answer = await api.call("GET", path);
        // The last fault may be a killed scheduling process that is still coming back.
        for (let i = 0; page.status === 503 && i < 40; i++) {
          await new Promise((r) => setTimeout(r, 250));
          page = await api.call("GET", path);
        }
        if (page.status !== 200)
          throw new Error(`GET /appointments: ${page.status} ${JSON.stringify(page.body)}`);
        meetings.push(...page.body.data);
        cursor = page.body.nextCursor;
      } while (cursor);
      const ids = new Set(meetings.map((m) => m.id));
      check(
        ids.size === booked.size,
        `one meeting per accepted key (${ids.size} meetings, ${booked.size} keys)`,
      );
      const bookedEvents = new Map<string, number>();
      for (const e of events)
        if (e.type === "meeting.booked") bookedEvents.set(e.data.id, (bookedEvents.get(e.data.id) ?? 0) + 1);
      for (const [key, id] of booked) {
        check(ids.has(id), `the meeting of ${key} is there`);
        check(
          bookedEvents.get(id) === 1,
          `meeting ${id} has one meeting.booked event (${bookedEvents.get(id)})`,
        );
      }
      for (const a of assignees) {
        const own = meetings
          .filter((m) => m.assigneeUserId === a)
          .sort((x, y) => x.startAt.localeCompare(y.startAt));
        const overlaps = own.filter((m, i) => i > 0 && m.startAt < own[i - 1]!.endAt).length;
        check(overlaps === 0, `assignee ${a} is never in two meetings at once (${overlaps} overlaps)`);
      }
      const perDay = new Map<string, number>();
      for (const m of meetings)
        perDay.set(m.startAt.slice(0, 10), (perDay.get(m.startAt.slice(0, 10)) ?? 0) + 1);
      const over = [...perDay].filter(([, count]) => count > cap);
      check(over.length === 0, `no day above its cap of ${cap} (${JSON.stringify(over)})`);
      check(booked.size > 0, `bookings were accepted (${booked.size})`);
    },
  };
}

/**
 * The timeline: inbox messages of every kind of actor published on INGEST while the timeline is killed,
 * with duplicates and malformed messages in between. Every stored message is listed once, in order,
 * and the contact's touches are the first and last message stamped by a user.
 */
function timelineWorkload(): Workload {
  let api: Api;
  let workspaceId = "";
  let contactId = "";
  const run = Math.random().toString(36).slice(2, 8);
  const stored = new Map<string, { at: string; user: boolean }>(); // id → send date, actor=user
  const t0 = Date.UTC(2026, 0, 1);
  const message = (n: number) => {
    const kind = n % 3;
    return {
      workspaceId,
      rowId: `${run}-${n}`,
      channel: "whatsapp",
      direction: kind === 1 ? "inbound" : "outbound",
      contactId,
      conversationId: `cv-${run}`,
      conversationAssigneeUserId: "owner",
      sentAt: new Date(t0 + n * 1000).toISOString(),
      senderUserId: kind === 0 ? `u${n % 5}` : undefined,
      senderKind: kind === 2 ? "automation" : undefined,
      preview: `chaos ${n}`,
    };
  };
  return {
    name: "timeline: ingest",
    async setup(a, ws) {
      api = a;
      workspaceId = ws;
      const c = await api.call("POST", "/contacts", {
        name: "Timeline",
        phone: `+55 31 9${run.replace(/\D/g, "2")}0000`,
      });
      contactId = c.body.id;
    },
    async write(_send, n) {
      const m = message(n);
      await api.publish("ingest.inbox.message", m);
      stored.set(`msg:${m.rowId}`, { at: m.sentAt, user: m.senderUserId !== undefined });
      // A duplicate now and then, and a message against the contract: neither may change anything.
      if (n % 5 === 0) await api.publish("ingest.inbox.message", m);
      if (n % 7 === 0)
        await api.publish("ingest.inbox.message", { ...m, rowId: `${run}-bad-${n}`, sentAt: "never" });
    },
    async verify(_api, _events, check) {
      const want = [...stored].sort(([a, x], [b, y]) =>
        x.at === y.at ? (a < b ? 1 : -1) : x.at < y.at ? 1 : -1,
      );
      const list = async () => {
        const ids: string[] = [];
        let cursor: string | null = null;
        do {
          const page: Answer = await api.call(
            "GET",
            `/interactions?contactId=${contactId}&limit=500${cursor ? `&cursor=${cursor}` : ""}`,
          );
          if (page.status !== 200) return [];
          ids.push(...page.body.data.map((i: { id: string }) => i.id));
          cursor = page.body.nextCursor;
        } while (cursor);
        return ids;
      };
      // The timeline drains what it missed while it was down: a few seconds at most.
      let ids = await list();
      for (let tries = 0; ids.length < want.length && tries < 100; tries++) {
        await new Promise((r) => setTimeout(r, 200));
        ids = await list();
      }
      check(ids.length === new Set(ids).size, `no interaction is listed twice (${ids.length})`);
      check(
        JSON.stringify(ids) === JSON.stringify(want.map(([id]) => id)),
        `every accepted message is listed once, newest first (${ids.length} listed, ${want.length} published)`,
      );
      const touches = want.filter(([, m]) => m.user).map(([, m]) => m.at);
      const contact = await api.call("GET", `/contacts/${contactId}`);
      check(
        contact.body.firstHumanTouchAt === (touches.at(-1) ?? null) &&
          contact.body.lastHumanTouchAt === (touches[0] ?? null),
        `the contact's touches are its first and last user message (${contact.body.firstHumanTouchAt}, ${contact.body.lastHumanTouchAt})`,
      );
      check(stored.size > 0, `messages were published (${stored.size})`);
    },
  };
}

/**
 * Webhooks: a subscription to contact.created on a local receiver; after the faults (the
 * webhooks process killed among them) every accepted contact reached the receiver, through one delivery
 * (one x-funil-delivery per event, however often it was attempted), each signed with the secret.
 */
function deliveriesWorkload(): Workload {
  const accepted = new Set<string>();
  let receiver: Receiver | undefined;
  let secret = "";
  return {
    name: "webhooks: contact.created deliveries",
    async setup(api) {
      receiver = await startReceiver();
      const sub = await api.call("POST", "/webhooks", {
        url: receiver.url("/chaos"),
        events: ["contact.created"],
      });
      if (sub.status !== 201) throw new Error(`webhook: ${sub.status} ${JSON.stringify(sub.body)}`);
      secret = sub.body.secret;
    },
    async write(send, n) {
      const res = await send("POST", "/contacts", {
        name: `Hook ${n}`,
        phone: `+55 61 ${String(n).padStart(9, "0")}`,
      });
      if (res.status === 201) accepted.add(res.body.id);
    },
    async verify(_api, _events, check) {
      const rx = receiver!;
      const delivered = () => new Set(rx.at("/chaos").map((r) => r.body?.data?.id));
      const deadline = Date.now() + 30_000;
      while ([...accepted].some((id) => !delivered().has(id)) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 200));
      const missing = [...accepted].filter((id) => !delivered().has(id));
      check(missing.length === 0, `every accepted contact was delivered (${missing.length} missing)`);
      const deliveriesOf = new Map<string, Set<string>>();
      for (const r of rx.at("/chaos")) {
        const ids = deliveriesOf.get(r.body.data.id) ?? new Set();
        ids.add(String(r.headers["x-funil-delivery"]));
        deliveriesOf.set(r.body.data.id, ids);
      }
      const twice = [...deliveriesOf.values()].filter((ids) => ids.size > 1).length;
      check(twice === 0, `one delivery per event and subscription (${twice} events had more)`);
      check(
        rx.at("/chaos").every((r) => signedWith(r, secret)),
        "every attempt is signed with the subscription's secret",
      );
      check(accepted.size > 0, `contacts for the webhook were accepted (${accepted.size})`);
      await rx.close();
    },
  };
}

/**
 * Learner usage: each write is a learner sent as four PLATFORM messages (the profile, an enrollment, then
 * lesson progress newer before older) through NATS restarts and kills of the learning service.
 * Afterwards every published learner is listed once, with one enrollment and the newer progress (the
 * consumer's inbox and the latest-`at` rule hold across redeliveries).
 */
function learningWorkload(): Workload {
  let api: Api;
  const learners = new Set<string>();
  const run = Math.random().toString(36).slice(2, 8);
  return {
    name: "learning: platform messages",
    async setup(a) {
      api = a;
    },
    async write(_send, n) {
      const userId = `chaos-${run}-${n}`;
      const progress = (watchSec: number, at: string) => ({
        userId,
        lessonId: "chaos-l1",
        courseId: "chaos-c1",
        watchSec,
        watchPct: watchSec,
        completed: false,
        at,
      });
      await api.publish("platform.user.upserted", {
        userId,
        name: `Chaos ${run} ${n}`,
        email: `${userId}@chaos.io`,
        createdAt: new Date().toISOString(),
      });
      await api.publish("platform.enrollment.upserted", {
        userId,
        courseId: "chaos-c1",
        status: "active",
        progressPct: 10,
        startedAt: null,
        completedAt: null,
      });
      await api.publish("platform.lesson.progress", progress(20, new Date().toISOString()));
      await api.publish("platform.lesson.progress", progress(10, "2020-01-01T00:00:00.000Z"));
      learners.add(userId);
    },
    async verify(_api, _events, check) {
      const listed = async () => {
        const out = new Map<string, Answer["body"]>();
        let cursor: string | null = null;
        do {
          const page: Answer = await api.call(
            "GET",
            `/platform/users?q=chaos-${run}&limit=500${cursor ? `&cursor=${cursor}` : ""}`,
          );
          for (const l of page.body.data ?? []) out.set(l.id, l);
          cursor = page.body.nextCursor ?? null;
        } while (cursor);
        return out;
      };
      // The consumer catches up after the last fault; what a killed copy had taken comes back after its
      // ack wait (5 s).
      let found = await listed();
      for (let i = 0; i < 200 && found.size < learners.size; i++) {
        await new Promise((r) => setTimeout(r, 100));
        found = await listed();
      }
      check(
        found.size === learners.size,
        `every published learner is listed once (${found.size} of ${learners.size})`,
      );
      for (const id of learners) {
        check(found.get(id)?.enrolledCourses === 1, `learner ${id} has one enrollment`);
        const one = await api.call("GET", `/platform/users/${id}?days=365`);
        check(
          one.status === 200 && one.body.lessons.length === 1 && one.body.lessons[0].watchSec === 20,
          `learner ${id} keeps the newer progress (${one.status}, ${JSON.stringify(one.body?.lessons)})`,
        );
      }
      check(learners.size > 0, `learners were published (${learners.size})`);
    },
  };
}

export const WORKLOADS: Array<() => Workload> = [
  crmWorkload,
  timelineWorkload,
  schedulingWorkload,
  deliveriesWorkload,
  learningWorkload,
];
