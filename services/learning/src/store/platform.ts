import { firstDelivery, type Sql, type TransactionSql } from "@funil/db";
import { type DataOf, type PlatformMessage, searchText } from "../messages.js";

/**
 * Applies one platform message (the live stream). Each write is an upsert on
 * the message's natural key, written so that repeating a message changes
 * nothing and that the order of arrival does not matter where docs/api/learners.md §GET /platform/users/{id} says
 * the latest `at` stands; the bulk import merges with the same rules, set-based
 * (store/bulk.ts).
 */
type Apply<S extends PlatformMessage["subject"]> = (tx: TransactionSql, d: DataOf<S>) => Promise<unknown>;

const APPLY: { [S in PlatformMessage["subject"]]: Apply<S> } = {
  "platform.user.upserted": (tx, d) => tx`
    insert into users (id, name, email, created_at, search)
    values (${d.userId}, ${d.name}, ${d.email}, ${d.createdAt}, ${searchText(d.name, d.email)})
    on conflict (id) do update set name = excluded.name, email = excluded.email,
      created_at = excluded.created_at, search = excluded.search`,

  "platform.course.upserted": async (tx, d) => {
    await tx`
      insert into courses (id, title) values (${d.courseId}, ${d.title})
      on conflict (id) do update set title = excluded.title`;
    if (d.lessons.length === 0) return;
    const lessons = d.lessons.map((l) => ({ id: l.lessonId, course_id: d.courseId, title: l.title }));
    await tx`
      insert into lessons ${tx(lessons)}
      on conflict (id) do update set course_id = excluded.course_id, title = excluded.title`;
  },

  "platform.enrollment.upserted": async (tx, d) => {
    await tx`
      insert into enrollments (user_id, course_id, status, progress_pct, started_at, completed_at)
      values (${d.userId}, ${d.courseId}, ${d.status}, ${d.progressPct}, ${d.startedAt ?? null},
              ${d.completedAt ?? null})
      on conflict (user_id, course_id) do update set status = excluded.status,
        progress_pct = excluded.progress_pct, started_at = excluded.started_at,
        completed_at = excluded.completed_at`;
    await tx`
      insert into users (id, learner) values (${d.userId}, true)
      on conflict (id) do update set learner = true where not users.learner`;
  },

  "platform.session.opened": async (tx, d) => {
    await tx`
      insert into sessions (user_id, session_key, at, ip)
      values (${d.userId}, ${d.sessionId ?? `at:${d.at.toISOString()}`}, ${d.at}, ${d.ip})
      on conflict do nothing`;
    await tx`
      insert into users (id, last_login_at, last_active_at) values (${d.userId}, ${d.at}, ${d.at})
      on conflict (id) do update set
        last_login_at = greatest(users.last_login_at, excluded.last_login_at),
        last_active_at = greatest(users.last_active_at, excluded.last_active_at)`;
  },

  "platform.session.seen": (tx, d) => tx`
    insert into users (id, last_active_at) values (${d.userId}, ${d.at})
    on conflict (id) do update set last_active_at = greatest(users.last_active_at, excluded.last_active_at)`,

  "platform.lesson.progress": (tx, d) => tx`
    insert into lesson_progress as p (user_id, lesson_id, course_id, watch_sec, watch_pct, completed, at)
    values (${d.userId}, ${d.lessonId}, ${d.courseId}, ${d.watchSec}, ${d.watchPct}, ${d.completed}, ${d.at})
    on conflict (user_id, lesson_id) do update set course_id = excluded.course_id,
      watch_sec = excluded.watch_sec, watch_pct = excluded.watch_pct, completed = excluded.completed,
      at = excluded.at
    where (excluded.at, excluded.watch_sec, excluded.watch_pct, excluded.completed)
        > (p.at, p.watch_sec, p.watch_pct, p.completed)`,

  "platform.certificate.issued": (tx, d) => tx`
    insert into certificates (code, user_id, course_id, course_title, issued_at)
    values (${d.code}, ${d.userId}, ${d.courseId}, ${d.courseTitle ?? null}, ${d.issuedAt})
    on conflict (code) do update set user_id = excluded.user_id, course_id = excluded.course_id,
      course_title = excluded.course_title, issued_at = excluded.issued_at`,

  "platform.library.doc.upserted": (tx, d) => tx`
    insert into library_docs (id, title) values (${d.docId}, ${d.title})
    on conflict (id) do update set title = excluded.title`,

  "platform.library.read": (tx, d) => tx`
    insert into library_reads as r (user_id, doc_id, read_sec, read, at)
    values (${d.userId}, ${d.docId}, ${d.readSec}, ${d.read}, ${d.at})
    on conflict (user_id, doc_id) do update set read_sec = excluded.read_sec, read = excluded.read,
      at = excluded.at
    where (excluded.at, excluded.read_sec, excluded.read) > (r.at, r.read_sec, r.read)`,
};

/** Applies a message in the caller's transaction. */
export const applyMessage = (tx: TransactionSql, m: PlatformMessage) =>
  (APPLY[m.subject] as Apply<typeof m.subject>)(tx, m.data as never);

export function platformStore(sql: Sql) {
  return {
    /** Applies a message once per message id (the consumer's inbox); false when it was applied before. */
    applyOnce: (consumer: string, messageId: string, m: PlatformMessage): Promise<boolean> =>
      sql.begin(async (tx) => {
        if (!(await firstDelivery(tx, consumer, messageId))) return false;
        await applyMessage(tx, m);
        return true;
      }),
  };
}
export type PlatformStore = ReturnType<typeof platformStore>;
