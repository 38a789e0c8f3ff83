-- A timestamp as the API writes it (docs/api/conventions.md: ISO 8601 in UTC with milliseconds; to_char's MS
-- truncates to the millisecond, as a Date does). One name for what the reads format in PostgreSQL, so that
-- their statements are one plain template each: the same expression spliced in as a fragment twelve times
-- cost the driver more to assemble per call than the statement's whole result took to read. A SQL function
-- of one expression, stable: the planner inlines it.
create or replace function api_time(t timestamptz) returns text
  language sql stable parallel safe
  return to_char(t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
