-- GET /platform/users?q= is planned for its term (`search like '%term%'`), whose share of the learners
-- PostgreSQL can only read off the search column's histogram. With the default 100 bounds, a term held by
-- one learner in many thousands sometimes sits in a bound after an ANALYZE: it then looks a hundred times
-- as common, and the page walks users_learners through every learner instead of reading its few matches by
-- users_search (as crm's contacts.search did: services/crm/migrations/00007). With 1 000 bounds the
-- estimate stays near the truth; planning a search costs a little more. Taken at the next ANALYZE.
alter table users alter column search set statistics 1000;
