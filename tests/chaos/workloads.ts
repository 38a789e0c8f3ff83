/**
 * What the chaos run writes, one workload per service. Each one writes through the gateway the way a
 * careful client does (retrying with the same Idempotency-Key, or the same upsert, until it gets an
 * answer), remembers what was accepted, and afterwards checks that every accepted write is there once
 * and has exactly one event. A new service adds its workload to WORKLOADS. A service fed by the bus
 * (learning) publishes its writes instead, with `publish`.
 */
export interface Api {
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
  admin(method: string, path: string, body?: unknown): Promise<Answer>;
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
  /** Write number n; `send` retries until a final answer and returns it, `publish` until JetStream acks. */
  write(send: Send, n: number, publish: Publish): Promise<void>;
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
/** Publishes to JetStream (subject without the FUNIL_ENV prefix) with a message id; false if never acked. */
export type Publish = (subject: string, data: unknown, msgID: string) => Promise<boolean>;

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
 * learning: each write is a learner sent as four PLATFORM messages (the profile, an enrollment, then
 * lesson progress newer before older) through NATS restarts and kills of the service. Afterwards every
 * acked learner is listed once, with one enrollment and the newer progress (the consumer's inbox and the
 * latest-`at` rule hold across redeliveries).
 */
function learningWorkload(): Workload {
  const learners = new Set<string>();
  const run = Math.random().toString(36).slice(2, 8);
  return {
    name: "learning: platform messages",
    async setup() {},
    async write(_send, n, publish) {
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
      const sent =
        (await publish(
          "platform.user.upserted",
          {
            userId,
            name: `Chaos ${run} ${n}`,
            email: `${userId}@chaos.io`,
            createdAt: new Date().toISOString(),
          },
          `${userId}-user`,
        )) &&
        (await publish(
          "platform.enrollment.upserted",
          {
            userId,
            courseId: "chaos-c1",
            status: "active",
            progressPct: 10,
            startedAt: null,
            completedAt: null,
          },
          `${userId}-enrollment`,
        )) &&
        (await publish("platform.lesson.progress", progress(20, new Date().toISOString()), `${userId}-p2`)) &&
        (await publish("platform.lesson.progress", progress(10, "2020-01-01T00:00:00.000Z"), `${userId}-p1`));
      if (sent) learners.add(userId);
    },
    async verify(api, _events, check) {
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
        `every acked learner is listed once (${found.size} of ${learners.size})`,
      );
      for (const id of learners) {
        check(found.get(id)?.enrolledCourses === 1, `learner ${id} has one enrollment`);
        const one = await api.call("GET", `/platform/users/${id}?days=365`);
        check(
          one.status === 200 && one.body.lessons.length === 1 && one.body.lessons[0].watchSec === 20,
          `learner ${id} keeps the newer progress (${one.status}, ${JSON.stringify(one.body?.lessons)})`,
        );
      }
      check(learners.size > 0, `learners were accepted (${learners.size})`);
    },
  };
}

export const WORKLOADS: Array<() => Workload> = [crmWorkload, learningWorkload];
