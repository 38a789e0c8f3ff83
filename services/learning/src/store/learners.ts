import type { Sql } from "@funil/db";

export interface LearnerRecord {
  id: string;
  name: string;
  email: string;
  createdAt: Date;
  lastLoginAt: Date | null;
  lastActiveAt: Date | null;
  enrolledCourses: number;
  completedCourses: number;
  certificates: number;
}

export interface LearnerFilters {
  /** Already folded (lower-case, accent-free). */
  q?: string;
  activeSince?: Date;
  activeBefore?: Date;
}

export interface LearnerDetailRecord {
  id: string;
  name: string;
  email: string;
  createdAt: Date;
  windowDays: number;
  access: {
    lastLoginAt: Date | null;
    lastActiveAt: Date | null;
    sessionsInWindow: number;
    lastIp: string | null;
  };
  courses: Array<{
    courseId: string;
    courseTitle: string | null;
    status: string;
    progressPct: number;
    startedAt: Date | null;
    completedAt: Date | null;
  }>;
  lessons: Array<{
    lessonId: string;
    title: string | null;
    courseTitle: string | null;
    watchSec: number;
    watchPct: number;
    completed: boolean;
    lastDate: Date;
  }>;
  certificates: Array<{ code: string; courseId: string; courseTitle: string | null; issuedAt: Date }>;
  library: Array<{ docId: string; title: string | null; readSec: number; read: boolean; lastDate: Date }>;
}

/** A list of the detail as JSON gives it: timestamps as strings. */
type Json<T> = {
  [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K];
};

interface DetailRow {
  id: string;
  name: string;
  email: string;
  createdAt: Date;
  lastLoginAt: Date | null;
  lastActiveAt: Date | null;
  sessionsInWindow: number;
  lastIp: string | null;
  courses: Array<Json<LearnerDetailRecord["courses"][number]>>;
  lessons: Array<Json<LearnerDetailRecord["lessons"][number]>>;
  certificates: Array<Json<LearnerDetailRecord["certificates"][number]>>;
  library: Array<Json<LearnerDetailRecord["library"][number]>>;
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Learners: users with a known profile and at least one enrollment
 * (docs/api/learners.md §GET /platform/users). The partial indexes of the migration hold exactly them.
 */
export function learnerStore(sql: Sql) {
  return {
    /** Keyset page over (createdAt, id); the counters are all-time, counted for the page's rows only. */
    async list(f: LearnerFilters, limit: number, after?: [Date, string]): Promise<LearnerRecord[]> {
      const conditions = [sql`u.learner`, sql`u.created_at is not null`];
      if (f.q) conditions.push(sql`u.search like ${`%${escapeLike(f.q)}%`}`);
      // A learner who never logged in has a null lastActiveAt and matches neither bound.
      if (f.activeSince) conditions.push(sql`u.last_active_at >= ${f.activeSince}`);
      if (f.activeBefore) conditions.push(sql`u.last_active_at < ${f.activeBefore}`);
      if (after) conditions.push(sql`(u.created_at, u.id) > (${after[0]}, ${after[1]})`);
      const where = conditions.reduce((acc, c) => sql`${acc} and ${c}`);
      return sql<LearnerRecord[]>`
        select u.id, u.name, u.email, u.created_at, u.last_login_at, u.last_active_at,
          (select count(*)::int from enrollments e where e.user_id = u.id) as enrolled_courses,
          (select count(*)::int from enrollments e where e.user_id = u.id and e.completed_at is not null)
            as completed_courses,
          (select count(*)::int from certificates c where c.user_id = u.id) as certificates
        from users u where ${where}
        order by u.created_at, u.id limit ${limit}`;
    },

    /**
     * One learner's usage; lessons, library and sessionsInWindow since `since`. Undefined: no such
     * learner. One statement (one round trip, one connection), the lists aggregated as JSON.
     */
    async get(id: string, windowDays: number, since: Date): Promise<LearnerDetailRecord | undefined> {
      const [row] = await sql<DetailRow[]>`
        select u.id, u.name, u.email, u.created_at, u.last_login_at, u.last_active_at,
          (select count(*)::int from sessions s where s.user_id = u.id and s.at >= ${since}) as sessions_in_window,
          (select ip from sessions s where s.user_id = u.id order by s.at desc, s.session_key desc limit 1)
            as last_ip,
          coalesce((
            select json_agg(json_build_object('courseId', e.course_id, 'courseTitle', c.title,
                     'status', e.status, 'progressPct', e.progress_pct, 'startedAt', e.started_at,
                     'completedAt', e.completed_at) order by e.started_at nulls last, e.course_id)
            from enrollments e left join courses c on c.id = e.course_id where e.user_id = u.id), '[]')
            as courses,
          coalesce((
            select json_agg(json_build_object('lessonId', p.lesson_id, 'title', l.title, 'courseTitle', c.title,
                     'watchSec', p.watch_sec, 'watchPct', p.watch_pct, 'completed', p.completed,
                     'lastDate', p.at) order by p.at desc, p.lesson_id)
            from lesson_progress p
              left join lessons l on l.id = p.lesson_id
              left join courses c on c.id = p.course_id
            where p.user_id = u.id and p.at >= ${since}), '[]') as lessons,
          coalesce((
            select json_agg(json_build_object('code', k.code, 'courseId', k.course_id,
                     'courseTitle', coalesce(k.course_title, c.title), 'issuedAt', k.issued_at)
                     order by k.issued_at, k.code)
            from certificates k left join courses c on c.id = k.course_id where k.user_id = u.id), '[]')
            as certificates,
          coalesce((
            select json_agg(json_build_object('docId', r.doc_id, 'title', d.title, 'readSec', r.read_sec,
                     'read', r.read, 'lastDate', r.at) order by r.at desc, r.doc_id)
            from library_reads r left join library_docs d on d.id = r.doc_id
            where r.user_id = u.id and r.at >= ${since}), '[]') as library
        from users u where u.id = ${id} and u.learner and u.created_at is not null`;
      if (!row) return undefined;
      const at = (v: string | null) => (v === null ? null : new Date(v));
      return {
        id: row.id,
        name: row.name,
        email: row.email,
        createdAt: row.createdAt,
        windowDays,
        access: {
          lastLoginAt: row.lastLoginAt,
          lastActiveAt: row.lastActiveAt,
          sessionsInWindow: row.sessionsInWindow,
          lastIp: row.lastIp,
        },
        courses: row.courses.map((c) => ({
          ...c,
          startedAt: at(c.startedAt),
          completedAt: at(c.completedAt),
        })),
        lessons: row.lessons.map((l) => ({ ...l, lastDate: new Date(l.lastDate) })),
        certificates: row.certificates.map((c) => ({ ...c, issuedAt: new Date(c.issuedAt) })),
        library: row.library.map((d) => ({ ...d, lastDate: new Date(d.lastDate) })),
      };
    },
  };
}
export type LearnerStore = ReturnType<typeof learnerStore>;
