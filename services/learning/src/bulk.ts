import type { ErrorDetail } from "@funil/errors";
import { type Checked, checkMessage, type PlatformMessage, searchText } from "./messages.js";

/**
 * The pure half of the bulk import: one NDJSON line as a checked message, and
 * a message as the rows of the staging tables it fills (store/bulk.ts loads
 * them with COPY and merges them).
 */

/** A staging table: its columns, in the order `rowsOf` gives values. */
export const STAGING = {
  users: "id text, name text, email text, created_at timestamptz, search text",
  courses: "id text, title text",
  lessons: "id text, course_id text, title text",
  enrollments:
    "user_id text, course_id text, status text, progress_pct int, started_at timestamptz, completed_at timestamptz",
  sessions: "user_id text, session_key text, at timestamptz, ip text",
  seen: "user_id text, at timestamptz",
  progress:
    "user_id text, lesson_id text, course_id text, watch_sec int, watch_pct int, completed boolean, at timestamptz",
  certificates: "code text, user_id text, course_id text, course_title text, issued_at timestamptz",
  docs: "id text, title text",
  reads: "user_id text, doc_id text, read_sec int, read boolean, at timestamptz",
} as const;
export type Staging = keyof typeof STAGING;

export type Value = string | number | boolean | Date | null;

/** A line of the import file, `{subject, data}` (docs/api/learners.md §Ingest), checked like a message of the stream. */
export function parseLine(text: string): Checked {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { ok: false, problems: [{ path: "line", message: "is not valid JSON" }] };
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    return { ok: false, problems: [{ path: "line", message: "must be an object {subject, data}" }] };
  const { subject, data } = parsed as { subject?: unknown; data?: unknown };
  if (typeof subject !== "string")
    return { ok: false, problems: [{ path: "subject", message: "must be a string" }] };
  return checkMessage(subject, data);
}

/** "line 12: data.watchPct: must be <= 100" */
export const lineError = (line: number, problems: ErrorDetail[]) =>
  `line ${line}: ${problems.map((p) => `${p.path}: ${p.message}`).join("; ")}`;

/** The staging rows of one message (a course fills two tables). */
export function rowsOf(m: PlatformMessage): Array<[Staging, Value[]]> {
  switch (m.subject) {
    case "platform.user.upserted": {
      const d = m.data;
      return [["users", [d.userId, d.name, d.email, d.createdAt, searchText(d.name, d.email)]]];
    }
    case "platform.course.upserted": {
      const d = m.data;
      return [
        ["courses", [d.courseId, d.title]],
        ...d.lessons.map((l): [Staging, Value[]] => ["lessons", [l.lessonId, d.courseId, l.title]]),
      ];
    }
    case "platform.enrollment.upserted": {
      const d = m.data;
      return [
        [
          "enrollments",
          [d.userId, d.courseId, d.status, d.progressPct, d.startedAt ?? null, d.completedAt ?? null],
        ],
      ];
    }
    case "platform.session.opened": {
      const d = m.data;
      return [["sessions", [d.userId, d.sessionId ?? `at:${d.at.toISOString()}`, d.at, d.ip]]];
    }
    case "platform.session.seen":
      return [["seen", [m.data.userId, m.data.at]]];
    case "platform.lesson.progress": {
      const d = m.data;
      return [["progress", [d.userId, d.lessonId, d.courseId, d.watchSec, d.watchPct, d.completed, d.at]]];
    }
    case "platform.certificate.issued": {
      const d = m.data;
      return [["certificates", [d.code, d.userId, d.courseId, d.courseTitle ?? null, d.issuedAt]]];
    }
    case "platform.library.doc.upserted":
      return [["docs", [m.data.docId, m.data.title]]];
    case "platform.library.read": {
      const d = m.data;
      return [["reads", [d.userId, d.docId, d.readSec, d.read, d.at]]];
    }
  }
}

const ESCAPES: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" };

/** One row in COPY's text format: tab-separated, \N for null, backslash escapes. */
export function copyLine(values: Value[]): string {
  return `${values
    .map((v) => {
      if (v === null) return "\\N";
      if (v instanceof Date) return v.toISOString();
      if (typeof v === "boolean") return v ? "t" : "f";
      if (typeof v === "number") return String(v);
      return v.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c]!);
    })
    .join("\t")}\n`;
}
