import type { ErrorDetail } from "@funil/errors";
import { parseTimestamp, timestamp, z } from "@funil/schemas";

/**
 * The platform's messages (docs/api/learners.md §Ingest), one schema per subject: the live
 * stream and the bulk import read them through here, so both accept and
 * refuse exactly the same records. Unknown extra fields are ignored (the
 * platform may send more than we keep).
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

export type Subject = keyof typeof PLATFORM_MESSAGES;
export const SUBJECTS = Object.keys(PLATFORM_MESSAGES) as Subject[];

/** A checked message: its subject and its data, timestamps as Dates. */
export type PlatformMessage = {
  [S in Subject]: { subject: S; data: z.output<(typeof PLATFORM_MESSAGES)[S]> };
}[Subject];
export type DataOf<S extends Subject> = z.output<(typeof PLATFORM_MESSAGES)[S]>;

export type Checked = { ok: true; message: PlatformMessage } | { ok: false; problems: ErrorDetail[] };

const isSubject = (s: string): s is Subject => Object.hasOwn(PLATFORM_MESSAGES, s);

/** A message (subject without the FUNIL_ENV prefix, data already parsed from JSON), checked. */
export function checkMessage(subject: string, data: unknown): Checked {
  if (!isSubject(subject))
    return {
      ok: false,
      problems: [{ path: "subject", message: `unknown subject ${JSON.stringify(subject)}` }],
    };
  const result = PLATFORM_MESSAGES[subject].safeParse(data);
  if (!result.success) {
    // One problem per field: a timestamp that is not ISO-8601 need not also be told it is out of range.
    const byPath = new Map<string, string>();
    for (const issue of result.error.issues) {
      const path = ["data", ...issue.path.map(String)].join(".");
      if (!byPath.has(path)) byPath.set(path, issue.message);
    }
    return { ok: false, problems: [...byPath].map(([path, message]) => ({ path, message })) };
  }
  return { ok: true, message: { subject, data: result.data } as PlatformMessage };
}

/** One problem per line, for logs, dead letters and the import's error. */
export const describeProblems = (problems: ErrorDetail[]) =>
  problems.map((p) => `${p.path}: ${p.message}`).join("; ");

/** Lower-case and accent-free, so `q` matches "joão" with "JOAO" (as crm's contact search). */
export function fold(value: string): string {
  return value.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
}
export const searchText = (name: string, email: string) => fold(`${name} ${email}`);
