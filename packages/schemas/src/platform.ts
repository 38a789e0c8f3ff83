import { z } from "zod";
import { timestamp } from "./common.js";
import { parseTimestamp } from "./time.js";

/**
 * The e-learning platform's messages (docs/api/learners.md §Ingest), one schema per subject: the learning
 * service's live stream and bulk import read them through here, so both accept and refuse exactly the
 * same records, and the AsyncAPI document describes PLATFORM from them. Unknown extra fields are ignored
 * (the platform may send more than we keep).
 */

const id = z.string().min(1, "must not be empty").max(200, "at most 200 characters");
const text = (max: number) => z.string().max(max, `at most ${max} characters`);
const count = z.number().int("must be an integer").min(0, "must be >= 0").max(2_147_483_647, "too large");
const pct = z.number().int("must be an integer").min(0, "must be >= 0").max(100, "must be <= 100");
const when = timestamp.transform((v) => parseTimestamp(v)!);
const optionalWhen = when.nullable().optional();

export const PLATFORM_MESSAGES = {
  "platform.user.upserted": z.object({
    userId: id,
    name: text(200),
    email: text(320),
    createdAt: when,
  }),
  "platform.course.upserted": z.object({
    courseId: id,
    title: text(500),
    lessons: z.array(z.object({ lessonId: id, title: text(500) })).max(10_000),
  }),
  "platform.enrollment.upserted": z.object({
    userId: id,
    courseId: id,
    status: z.string().min(1, "must not be empty").max(40, "at most 40 characters"),
    progressPct: pct,
    startedAt: optionalWhen,
    completedAt: optionalWhen,
  }),
  "platform.session.opened": z.object({
    userId: id,
    at: when,
    // A stamp as the platform saw it (an address, maybe with a proxy's notation): kept, not parsed.
    ip: z.string().min(1, "must not be empty").max(100, "at most 100 characters"),
    sessionId: id.nullable().optional(),
  }),
  "platform.session.seen": z.object({ userId: id, at: when }),
  "platform.lesson.progress": z.object({
    userId: id,
    lessonId: id,
    courseId: id,
    watchSec: count,
    watchPct: pct,
    completed: z.boolean(),
    at: when,
  }),
  "platform.certificate.issued": z.object({
    userId: id,
    code: id,
    courseId: id,
    courseTitle: text(500).nullable().optional(),
    issuedAt: when,
  }),
  "platform.library.doc.upserted": z.object({ docId: id, title: text(500) }),
  "platform.library.read": z.object({
    userId: id,
    docId: id,
    readSec: count,
    read: z.boolean(),
    at: when,
  }),
} as const;

/** Where the learning service keeps refused messages, with the reason: inside PLATFORM, so they are kept. */
export const PLATFORM_DEAD_LETTER = "platform.deadletter";

/** What the learning service publishes on PLATFORM_DEAD_LETTER for a message that fails its schema. */
export const platformDeadLetter = z
  .object({
    subject: z.string().describe("the refused message's subject, without the FUNIL_ENV prefix"),
    messageId: z.string().describe("its Nats-Msg-Id, else seq:<stream sequence>"),
    reason: z.string().describe("every problem, one `path: message` after another"),
    problems: z.array(z.object({ path: z.string(), message: z.string() })),
    data: z.string().describe("the refused message as it came"),
  })
  .describe("a platform message the learning service refused, kept with the reason");
export type PlatformDeadLetter = z.input<typeof platformDeadLetter>;
