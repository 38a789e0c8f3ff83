-- The sweep finds old attempts by time. Attempts are written in the order their POSTs went out, so a block
-- range index answers it as well as a B-tree, at a few pages instead of an entry per attempt: measured
-- alike in PostgreSQL CPU per recorded attempt (bench/attempts.mjs, bench/RESULTS-webhooks.md), and the
-- 30 days of the log no longer carry a second B-tree of their size.
drop index attempts_by_time;
create index attempts_by_time on attempts using brin (at);
