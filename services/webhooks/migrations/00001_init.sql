-- Webhook subscriptions and their deliveries (docs/api/webhooks.md §Subscription, §Delivery, §Retries, §Circuit breaker).
create table subscriptions (
  id text primary key,
  workspace_id text not null,
  -- The key that vouched for the events' read scopes: asked of the gateway's Auth at every attempt.
  key_id text not null,
  url text not null,
  events text[] not null,
  description text,
  active boolean not null default true,
  disabled_reason text check (disabled_reason in ('scope_revoked', 'circuit_breaker')),
  -- The first failure since the last success; null while healthy (the circuit breaker's clock).
  failing_since timestamptz,
  -- `whsec_…`, or `enc:v1:…` (AES-256-GCM) when WEBHOOK_SECRET_KEY is set.
  secret text not null,
  -- A rotated-out secret keeps signing, as a second v1, until previous_secret_until.
  previous_secret text,
  previous_secret_until timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index subscriptions_by_workspace on subscriptions (workspace_id, created_at, id);
-- The fan-out's lookup: the active subscriptions of a workspace to an event type.
create index subscriptions_active on subscriptions using gin (events) where active;

create table deliveries (
  id text primary key,
  subscription_id text not null references subscriptions (id) on delete cascade,
  workspace_id text not null,
  event_id text not null,
  event text not null,
  -- The request body, byte for byte the same at every attempt (only the signature is made afresh).
  body text not null,
  status text not null default 'pending' check (status in ('pending', 'delivered', 'dead')),
  attempts int not null default 0,
  response_status int,
  last_error text,
  last_attempt_at timestamptz,
  -- When the next attempt is due: a job that comes back early (a redelivery after a crash) waits.
  next_attempt_at timestamptz,
  -- An attempt in flight: no second copy of the job sends while it holds.
  lease_until timestamptz,
  created_at timestamptz not null,
  -- One delivery per subscription and event, however often the event arrives or how many copies run.
  unique (subscription_id, event_id)
);
create index deliveries_recent on deliveries (subscription_id, created_at desc, id desc);
create index deliveries_pending on deliveries (subscription_id) where status = 'pending';
