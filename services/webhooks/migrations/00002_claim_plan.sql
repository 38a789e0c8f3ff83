-- The claim of an attempt (`d.id = any($1) and d.status = 'pending'`) must find its deliveries by
-- primary key. With deliveries_pending beside it, the planner, short of statistics on a fresh or
-- fast-growing table, ANDed the primary key's bitmap with that partial index's, reading every pending
-- entry at each claim: the cost of a claim grew with the backlog (60 µs of PostgreSQL CPU per delivery
-- at 20 000 pending, against 27 µs without it). Its other use, ending a deactivated subscription's
-- pending deliveries, now reads that subscription's deliveries through deliveries_recent: a rare
-- statement (a breaker trip, a revoked scope) paying for its subscription's history, instead of every
-- attempt paying for the backlog.
drop index deliveries_pending;

-- Room in each page for the new version of a row: the claim (lease_until) and the outcome (status,
-- attempts, …) change no indexed column, so both can be HOT updates that add no index entries.
alter table deliveries set (fillfactor = 80);
