-- Half of each page free for the outcome of its deliveries. A delivery row is written twice, inserted at
-- the fan-out and updated with its outcome; the update is HOT (no new index entries) only when its page
-- has room for the new version. With pages 80 % full, 15 % of outcomes found room there; at 50 %, 55 %
-- did, and an outcome cost 11 µs of PostgreSQL CPU instead of 22-31 (scratch database, 20 000
-- deliveries in batches of 40). The price is space: twice the pages for the same rows.
alter table deliveries set (fillfactor = 50);
