-- GET /contacts?q= is planned for its word (`search like '%word%'`), whose share of the contacts PostgreSQL
-- can only read off the search column's histogram. With the default 100 bounds, a word in one contact in
-- 1 000 sat in one bound about one ANALYZE in ten: it then looked ten times as common, and the page walked
-- contacts_by_created through the whole workspace (70 ms on 60 000 contacts) instead of reading
-- contacts_search (3 ms). With 1 000 bounds the estimate stays near the truth; planning a search costs
-- ~0.08 ms more. Taken at the next ANALYZE (autovacuum's, or an operator's).
alter table contacts alter column search set statistics 1000;
