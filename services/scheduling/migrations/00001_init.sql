-- Calendars and meetings (docs/api/meetings.md §Meeting (appointment), §POST /appointments). The two booking rules are decided here, by
-- constraints, whatever Redis says: no assignee in two scheduled meetings at once, no day above its cap.
create extension if not exists btree_gist;

create table calendars (
  id text primary key,
  workspace_id text not null,
  key text not null,
  name text not null,
  duration_min int not null check (duration_min between 5 and 1440),
  daily_cap int not null check (daily_cap >= 1),
  timezone text not null,
  slot_interval_min int not null check (slot_interval_min between 5 and 1440),
  assignee_user_ids text[] not null,
  -- [{weekday, start, end}] in the calendar's local time.
  availability jsonb not null,
  created_at timestamptz not null,
  constraint calendars_key_unique unique (workspace_id, key)
);

create table appointments (
  id text primary key,
  workspace_id text not null,
  calendar_id text not null references calendars (id),
  calendar_key text not null,
  contact_id text not null,
  contact_name text,
  opportunity_id text,
  title text,
  location text,
  conference_url text,
  start_at timestamptz not null,
  end_at timestamptz not null,
  -- The calendar-local date of start_at: the day whose cap the meeting counts against.
  local_day date not null,
  assignee_user_id text not null,
  status text not null default 'scheduled' check (status in ('scheduled', 'canceled')),
  outcome text check (outcome in ('realizada', 'noshow', 'reagendada')),
  outcome_at timestamptz,
  canceled_at timestamptz,
  cancel_reason text,
  source text,
  created_by_user_id text,
  created_by_source text not null,
  recovered_from_appointment_id text references appointments (id),
  created_at timestamptz not null,
  updated_at timestamptz not null,
  check (end_at > start_at),
  -- An assignee is never in two scheduled meetings at once, in any calendar (docs/api/meetings.md §POST /appointments: slot_taken).
  constraint appointments_no_overlap exclude using gist (
    workspace_id with =, assignee_user_id with =, tstzrange(start_at, end_at, '[)') with &&
  ) where (status = 'scheduled')
);
-- Each noshow is recovered at most once, also under concurrent bookings (docs/api/meetings.md §POST /appointments).
create unique index appointments_recovers_once on appointments (recovered_from_appointment_id)
  where recovered_from_appointment_id is not null;
-- GET /appointments: keyset on (start_at, id), by status and by calendar.
create index appointments_by_start on appointments (workspace_id, status, start_at, id);
create index appointments_by_calendar on appointments (workspace_id, calendar_key, status, start_at, id);
create index appointments_by_created on appointments (workspace_id, created_at);
create index appointments_by_updated on appointments (workspace_id, updated_at);
create index appointments_by_outcome on appointments (workspace_id, outcome, start_at, id) where outcome is not null;
-- The noshows of a contact not yet recovered, for recoveredFromAppointmentId.
create index appointments_noshows on appointments (workspace_id, contact_id, start_at) where outcome = 'noshow';
-- Round-robin counts and the day's meetings of a calendar.
create index appointments_by_calendar_day on appointments (calendar_id, local_day) where status = 'scheduled';

-- Scheduled meetings per calendar and local day, kept in the booking's transaction: the cap's guard.
create table day_counts (
  calendar_id text not null references calendars (id),
  local_day date not null,
  count int not null,
  cap int not null,
  primary key (calendar_id, local_day),
  constraint day_counts_within_cap check (count between 0 and cap)
);
