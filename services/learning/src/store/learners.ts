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

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Learners: users with a known profile and at least one enrollment
 * (SPEC.md §2). The partial indexes of the migration hold exactly them.
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

    /** One learner's usage; lessons, library and sessionsInWindow since `since`. Undefined: no such learner. */
    async get(id: string, windowDays: number, since: Date): Promise<LearnerDetailRecord | undefined> {
      const [user] = await sql<
        Array<{
          id: string;
          name: string;
          email: string;
          createdAt: Date;
          lastLoginAt: Date | null;
          lastActiveAt: Date | null;
        }>
      >`
        select id, name, email, created_at, last_login_at, last_active_at from users
        where id = ${id} and learner and created_at is not null`;
      if (!user) return undefined;
      const [sessions, courses, lessons, certificates, library] = await Promise.all([
        sql<Array<{ inWindow: number; lastIp: string | null }>>`
          select (select count(*)::int from sessions where user_id = ${id} and at >= ${since}) as in_window,
                 (select ip from sessions where user_id = ${id} order by at desc, session_key desc limit 1)
                   as last_ip`,
        sql<LearnerDetailRecord["courses"]>`
          select e.course_id, c.title as course_title, e.status, e.progress_pct, e.started_at, e.completed_at
          from enrollments e left join courses c on c.id = e.course_id
          where e.user_id = ${id} order by e.started_at nulls last, e.course_id`,
        sql<LearnerDetailRecord["lessons"]>`
          select p.lesson_id, l.title, c.title as course_title, p.watch_sec, p.watch_pct, p.completed,
                 p.at as last_date
          from lesson_progress p
            left join lessons l on l.id = p.lesson_id
            left join courses c on c.id = p.course_id
          where p.user_id = ${id} and p.at >= ${since} order by p.at desc, p.lesson_id`,
        sql<LearnerDetailRecord["certificates"]>`
          select code, course_id, coalesce(c.course_title, k.title) as course_title, issued_at
          from certificates c left join courses k on k.id = c.course_id
          where c.user_id = ${id} order by issued_at, code`,
        sql<LearnerDetailRecord["library"]>`
          select r.doc_id, d.title, r.read_sec, r.read, r.at as last_date
          from library_reads r left join library_docs d on d.id = r.doc_id
          where r.user_id = ${id} and r.at >= ${since} order by r.at desc, r.doc_id`,
      ]);
      return {
        id: user.id,
        name: user.name,
        email: user.email,
        createdAt: user.createdAt,
        windowDays,
        access: {
          lastLoginAt: user.lastLoginAt,
          lastActiveAt: user.lastActiveAt,
          sessionsInWindow: sessions[0]?.inWindow ?? 0,
          lastIp: sessions[0]?.lastIp ?? null,
        },
        courses: [...courses],
        lessons: [...lessons],
        certificates: [...certificates],
        library: [...library],
      };
    },
  };
}
export type LearnerStore = ReturnType<typeof learnerStore>;
