import { pageLimit, plannedPerCall, type Sql } from "@funil/db";

/**
 * Timestamps that are only formatted for the answer come out of PostgreSQL already as the API writes them
 * (docs/api/conventions.md: ISO 8601 in UTC with milliseconds), by api_time (migrations/00002_api_time.sql):
 * parsing each into a Date and formatting it again was most of a list page's conversion work.
 */
export type IsoText = string;

export interface LearnerRecord {
  id: string;
  name: string;
  email: string;
  createdAt: IsoText;
  lastLoginAt: IsoText | null;
  lastActiveAt: IsoText | null;
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

/** A detail's list item as PostgreSQL aggregates it: an unknown title is absent, timestamps are IsoText. */
export interface LearnerDetailRecord {
  id: string;
  name: string;
  email: string;
  createdAt: IsoText;
  windowDays: number;
  access: {
    lastLoginAt: IsoText | null;
    lastActiveAt: IsoText | null;
    sessionsInWindow: number;
    lastIp: string | null;
  };
  courses: Array<{
    courseId: string;
    courseTitle?: string;
    status: string;
    progressPct: number;
    startedAt?: IsoText;
    completedAt?: IsoText;
  }>;
  lessons: Array<{
    lessonId: string;
    title?: string;
    courseTitle?: string;
    watchSec: number;
    watchPct: number;
    completed: boolean;
    lastDate: IsoText;
  }>;
  certificates: Array<{ code: string; courseId: string; courseTitle?: string; issuedAt: IsoText }>;
  library: Array<{ docId: string; title?: string; readSec: number; read: boolean; lastDate: IsoText }>;
}

type DetailRow = Omit<LearnerDetailRecord, "windowDays" | "access"> &
  LearnerDetailRecord["access"] & { sessionsInWindow: number };

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Learners: users with a known profile and at least one enrollment
 * (docs/api/learners.md §GET /platform/users). The partial indexes of the migration hold exactly them.
 */
export function learnerStore(sql: Sql) {
  /**
   * Keyset page over (createdAt, id); the counters are all-time, counted for the page's rows only;
   * returned unexecuted so that explain.test.ts EXPLAINs the very statement. Without a filter the page
   * walks users_learners from its cursor, a plan as good for every value: the page size is written into
   * the statement (pageLimit) so that PostgreSQL keeps it. A search or an activity bound needs its values
   * planned: a rare term reads its few matches by the trigram index (users_search), a common one walks
   * users_learners and filters; a narrow activity window reads users_active and sorts its few rows, a
   * wide one walks users_learners. The plan PostgreSQL would keep for them after five calls walks
   * users_learners, through every learner for a rare term or a narrow window. An activity bound, whose
   * generic plan PostgreSQL does keep after five calls of a wide window, is sent unnamed (plannedPerCall),
   * planned at every call. A search keeps its page size a parameter, which on 100 000 learners keeps the
   * plans made for its values (explain.test.ts writes down the sixth call): planning the whole statement
   * at every call cost a rare term's page 0.67 → 0.39 of the bare route (bench/RESULTS-learning.md).
   */
  function listQuery(f: LearnerFilters, limit: number, after?: [Date, string]) {
    const conditions = [sql`u.learner`, sql`u.created_at is not null`];
    if (f.q) conditions.push(sql`u.search like ${`%${escapeLike(f.q)}%`}`);
    // A learner who never logged in has a null lastActiveAt and matches neither bound.
    if (f.activeSince) conditions.push(sql`u.last_active_at >= ${f.activeSince}`);
    if (f.activeBefore) conditions.push(sql`u.last_active_at < ${f.activeBefore}`);
    if (after) conditions.push(sql`(u.created_at, u.id) > (${after[0]}, ${after[1]})`);
    const where = conditions.reduce((acc, c) => sql`${acc} and ${c}`);
    const planned = !f.q && !f.activeSince && !f.activeBefore;
    // The page is chosen first and formatted after: a search sorts every learner it matches, and
    // formatting in the same select formatted them all before the sort kept a page.
    const query = sql<LearnerRecord[]>`
      select u.id, u.name, u.email, api_time(u.created_at) as created_at,
        api_time(u.last_login_at) as last_login_at, api_time(u.last_active_at) as last_active_at,
        (select count(*)::int from enrollments e where e.user_id = u.id) as enrolled_courses,
        (select count(*)::int from enrollments e where e.user_id = u.id and e.completed_at is not null)
          as completed_courses,
        (select count(*)::int from certificates c where c.user_id = u.id) as certificates
      from (
        select u.id, u.name, u.email, u.created_at, u.last_login_at, u.last_active_at from users u
        where ${where} order by u.created_at, u.id ${pageLimit(sql, limit, planned)}
      ) u
      order by u.created_at, u.id`;
    return f.activeSince || f.activeBefore ? plannedPerCall(query) : query;
  }

  return {
    listQuery,
    list: (f: LearnerFilters, limit: number, after?: [Date, string]): Promise<LearnerRecord[]> =>
      listQuery(f, limit, after),

    /**
     * One learner's usage; lessons, library and sessionsInWindow since `since`. Undefined: no such
     * learner. One statement (one round trip, one connection), the lists aggregated as JSON with their
     * nulls left out (an absent field) and their timestamps as IsoText.
     */
    async get(id: string, windowDays: number, since: Date): Promise<LearnerDetailRecord | undefined> {
      const [row] = await sql<DetailRow[]>`
        select u.id, u.name, u.email, api_time(u.created_at) as created_at,
          api_time(u.last_login_at) as last_login_at, api_time(u.last_active_at) as last_active_at,
          (select count(*)::int from sessions s where s.user_id = u.id and s.at >= ${since}) as sessions_in_window,
          (select ip from sessions s where s.user_id = u.id order by s.at desc, s.session_key desc limit 1)
            as last_ip,
          coalesce((
            select json_strip_nulls(json_agg(json_build_object('courseId', e.course_id, 'courseTitle', c.title,
                     'status', e.status, 'progressPct', e.progress_pct, 'startedAt', api_time(e.started_at),
                     'completedAt', api_time(e.completed_at)) order by e.started_at nulls last, e.course_id))
            from enrollments e left join courses c on c.id = e.course_id where e.user_id = u.id), '[]')
            as courses,
          coalesce((
            select json_strip_nulls(json_agg(json_build_object('lessonId', p.lesson_id, 'title', l.title,
                     'courseTitle', c.title, 'watchSec', p.watch_sec, 'watchPct', p.watch_pct,
                     'completed', p.completed, 'lastDate', api_time(p.at)) order by p.at desc, p.lesson_id))
            from lesson_progress p
              left join lessons l on l.id = p.lesson_id
              left join courses c on c.id = p.course_id
            where p.user_id = u.id and p.at >= ${since}), '[]') as lessons,
          coalesce((
            select json_strip_nulls(json_agg(json_build_object('code', k.code, 'courseId', k.course_id,
                     'courseTitle', coalesce(k.course_title, c.title), 'issuedAt', api_time(k.issued_at))
                     order by k.issued_at, k.code))
            from certificates k left join courses c on c.id = k.course_id where k.user_id = u.id), '[]')
            as certificates,
          coalesce((
            select json_strip_nulls(json_agg(json_build_object('docId', r.doc_id, 'title', d.title,
                     'readSec', r.read_sec, 'read', r.read, 'lastDate', api_time(r.at))
                     order by r.at desc, r.doc_id))
            from library_reads r left join library_docs d on d.id = r.doc_id
            where r.user_id = u.id and r.at >= ${since}), '[]') as library
        from users u where u.id = ${id} and u.learner and u.created_at is not null`;
      if (!row) return undefined;
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
        courses: row.courses,
        lessons: row.lessons,
        certificates: row.certificates,
        library: row.library,
      };
    },
  };
}
export type LearnerStore = ReturnType<typeof learnerStore>;
