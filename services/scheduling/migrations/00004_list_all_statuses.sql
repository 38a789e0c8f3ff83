-- GET /appointments?status=all (docs/api/meetings.md §GET /appointments): keyset on (start_at, id) over every status,
-- which appointments_by_start and appointments_by_calendar cannot give since they lead with status. status comes
-- last, so that these are as wide as those: for one status the planner keeps to the index that leads with it.
create index appointments_by_start_all on appointments (workspace_id, start_at, id, status);
-- GET /appointments?calendarKey=&status=all: the same, within one calendar.
create index appointments_by_calendar_all on appointments (workspace_id, calendar_key, start_at, id, status);
