-- A delivery no longer references its subscription through a foreign key: the key's check ran a query
-- per inserted row, 1 280 of them per fan-out of 64 events to 20 subscriptions, and cost 3.4 µs of
-- PostgreSQL CPU per delivery of the 10-11 an insert costs (scratch database, 40 960 deliveries in
-- batches of 1 280: 457 ms with it, 317 without). What it guaranteed is kept by hand: the fan-out locks
-- the subscriptions it matched (for key share) until it commits, and deleting a subscription deletes its
-- deliveries in the same transaction (store/subscriptions.ts).
alter table deliveries drop constraint deliveries_subscription_id_fkey;
