import type { ErrorDetail } from "@funil/errors";
import { PLATFORM_MESSAGES, type z } from "@funil/schemas";

/**
 * The platform's messages (docs/api/learners.md §Ingest) are checked with PLATFORM_MESSAGES, one schema
 * per subject (@funil/schemas): the live stream and the bulk import read them through here, so both
 * accept and refuse exactly the same records.
 */

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
