-- A job of WEBHOOK_DELIVERIES (the deliveries of one subscription, fanned out together) is worked on by
-- one sender at a time: the holder of its lease. One lease per job replaces a lease written into every
-- delivery row before its attempt, a third of the row writes of a delivery (insert, claim, outcome).
-- The row exists while a sender holds the job; no row is a free job.
create table job_leases (
  job_id text primary key,
  -- The sender process that holds it (a random token per process), and until when.
  holder text not null,
  lease_until timestamptz not null
);

-- The lease each delivery row used to carry.
alter table deliveries drop column lease_until;
