-- The attempt log (docs/api/webhooks.md §Attempt log): one row per attempt of a delivery, written with
-- its outcome, kept WEBHOOK_ATTEMPT_RETENTION_DAYS (30 by default) and swept after.
create table attempts (
  id text primary key,
  delivery_id text not null,
  subscription_id text not null,
  workspace_id text not null,
  event text not null,
  -- When its POST went out, whether a 2xx came back, and how long the answer (or the failure) took.
  at timestamptz not null,
  succeeded boolean not null,
  response_status int,
  duration_ms int not null,
  -- The first 1 KB of the receiver's answer that came with its status; the error when none came.
  response_body text,
  error text
);
-- The log of a subscription, newest first (its keyset); the sweep finds old rows by time.
create index attempts_by_subscription on attempts (subscription_id, at desc, id desc);
create index attempts_by_time on attempts (at);
