-- A subscription's version counts the updates that changed it, raised by a trigger so that no update path
-- can leave it behind (a PATCH, a rotation, the circuit breaker, a revoked scope; an update that changes
-- nothing, as each failed attempt of a subscription already failing makes, leaves it): GET /webhooks reads
-- each subscription's id and version, and a copy of the webhooks service answers from memory the
-- subscriptions it holds at that version (keptRecords in packages/db), reading the others again.
alter table subscriptions add column version integer not null default 0;

create function subscriptions_raise_version() returns trigger language plpgsql as $$
begin
  new.version := old.version + 1;
  return new;
end
$$;

create trigger subscriptions_version before update on subscriptions
  for each row when (old.* is distinct from new.*) execute function subscriptions_raise_version();
