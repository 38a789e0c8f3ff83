-- Platform data (docs/api/learners.md §GET /platform/users, §Ingest). Global: no workspace column. Every write is an
-- idempotent upsert on a natural key, so the live stream and the bulk import can apply the same message
-- twice, or in another order, and end in the same state.
create extension if not exists pg_trgm;

create table users (
  id text primary key,
  -- Null until platform.user.upserted arrives (activity may come first): such a user is not shown.
  name text,
  email text,
  created_at timestamptz,
  -- Lower-case, accent-free name and e-mail for `q`.
  search text not null default '',
  -- Maxima over every session message: the same whatever order they arrive in.
  last_login_at timestamptz,
  last_active_at timestamptz,
  -- A learner is a user with at least one enrollment (docs/api/learners.md §GET /platform/users).
  learner boolean not null default false
);
-- Keyset order of GET /platform/users, and its two filters.
create index users_learners on users (created_at, id) where learner and created_at is not null;
create index users_active on users (last_active_at, created_at, id) where learner and created_at is not null;
create index users_search on users using gin (search gin_trgm_ops) where learner and created_at is not null;

create table courses (
  id text primary key,
  title text not null
);

create table lessons (
  id text primary key,
  course_id text not null,
  title text not null
);

create table enrollments (
  user_id text not null,
  course_id text not null,
  status text not null,
  progress_pct int not null,
  started_at timestamptz,
  completed_at timestamptz,
  primary key (user_id, course_id)
);

create table sessions (
  user_id text not null,
  -- The platform's sessionId, else the opening time: a repeated message is still one session.
  session_key text not null,
  at timestamptz not null,
  ip text not null,
  primary key (user_id, session_key)
);
create index sessions_by_user_at on sessions (user_id, at, session_key);

-- Cumulative: one row per (user, lesson), the message with the latest `at` (ties: the larger values).
create table lesson_progress (
  user_id text not null,
  lesson_id text not null,
  course_id text not null,
  watch_sec int not null,
  watch_pct int not null,
  completed boolean not null,
  at timestamptz not null,
  primary key (user_id, lesson_id)
);

create table certificates (
  code text primary key,
  user_id text not null,
  course_id text not null,
  course_title text,
  issued_at timestamptz not null
);
create index certificates_by_user on certificates (user_id, issued_at);

create table library_docs (
  id text primary key,
  title text not null
);

-- Cumulative per (user, document), like lesson_progress.
create table library_reads (
  user_id text not null,
  doc_id text not null,
  read_sec int not null,
  read boolean not null,
  at timestamptz not null,
  primary key (user_id, doc_id)
);
