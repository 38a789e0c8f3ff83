-- The event log (docs/api/events.md §Catch-up: GET /events): every subscribable event of EVENTS, written by
-- the fan-out in the transaction of its inbox row (so each event once), kept EVENT_LOG_RETENTION_DAYS.
create table event_log (
  id text primary key,
  workspace_id text not null,
  -- The event's sequence in the EVENTS stream: the order a catch-up lists them in.
  seq bigint not null,
  type text not null,
  occurred_at timestamptz not null,
  -- The envelope a webhook receiver gets, byte for byte (store/deliveries.ts deliveryBody).
  body text not null
);
-- A catch-up reads one workspace after a position in the stream.
create index event_log_by_workspace on event_log (workspace_id, seq);
-- The sweep finds old rows by time. Rows arrive nearly in time order, so a block range index answers it at
-- a fraction of a B-tree's cost on every insert.
create index event_log_by_time on event_log using brin (occurred_at);
