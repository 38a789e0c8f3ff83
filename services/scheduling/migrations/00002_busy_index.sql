-- Free slots read each assignee's scheduled meetings by start time: one index-only scan in
-- (assignee, start) order gives the busy time and, for the calendar's own meetings, the round-robin's
-- counts per day. A meeting ends inside one availability window of one local day, so it is never longer
-- than two days: the scan may start two days before the range and miss nothing.
alter table appointments add constraint appointments_within_two_days check (end_at <= start_at + interval '2 days');
create index appointments_busy on appointments (workspace_id, assignee_user_id, start_at)
  include (end_at, calendar_id, local_day) where status = 'scheduled';
