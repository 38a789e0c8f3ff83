-- The timeline (docs/api/interactions.md §Interaction, §Ingest): interactions from ingest and crm's notes, the
-- conversations' current owners, the per-contact human-touch summary, and the activity ledger.

-- One row per `<source>:<rowId>`: the primary key is what makes ingest idempotent. Ids sort byte-wise
-- (collate "C") so the order createdAt desc, id desc is the same in every locale and in the indexes.
create table interactions (
  workspace_id text not null,
  id text collate "C" not null,
  kind text not null,
  channel text not null,
  direction text not null check (direction in ('inbound', 'outbound')),
  actor text not null check (actor in ('user', 'contact', 'ia', 'automation', 'system', 'api', 'unknown')),
  -- Filled only when actor = user (docs/api/interactions.md §The 12 rules of the timeline, rule 9).
  user_id text check ((user_id is null) = (actor <> 'user')),
  contact_id text not null,
  opportunity_id text,
  conversation_id text,
  channel_instance_id text,
  sender_phone text,
  created_at timestamptz not null,
  duration_sec integer,
  status text,
  preview text,
  primary key (workspace_id, id)
);
-- The list's order, alone and under each id filter (channel, direction and actor filter these rows).
create index interactions_by_created on interactions (workspace_id, created_at desc, id desc);
create index interactions_by_contact on interactions (workspace_id, contact_id, created_at desc, id desc);
create index interactions_by_user on interactions (workspace_id, user_id, created_at desc, id desc)
  where user_id is not null;
-- A deal's first touch since its creation: one probe, never a scan of the contact's history.
create index interactions_human_touches on interactions (workspace_id, contact_id, created_at)
  where actor = 'user';

-- The current owner of each conversation (mutable, never the sender): the latest assignment wins,
-- whatever order the assignments arrive in.
create table conversations (
  workspace_id text not null,
  id text not null,
  assignee_user_id text,
  assigned_at timestamptz not null,
  primary key (workspace_id, id)
);

-- First and last actor = user touch per contact, kept as interactions arrive (least/greatest, so
-- order of arrival does not matter): the single contact read is one primary-key lookup.
create table contact_touches (
  workspace_id text not null,
  contact_id text not null,
  first_at timestamptz not null,
  last_at timestamptz not null,
  primary key (workspace_id, contact_id)
);

-- Deals as crm announced them: a deal's touches count from its creation, for its contact.
create table deals (
  workspace_id text not null,
  id text not null,
  contact_id text not null,
  created_at timestamptz not null,
  primary key (workspace_id, id)
);

-- The activity ledger: every action on a deal or one of its notes, tasks or meetings, one row per
-- domain event (its id is the key, so a redelivered event is recorded once).
create table activities (
  event_id text primary key,
  workspace_id text not null,
  opportunity_id text not null,
  type text not null,
  target_id text not null,
  at timestamptz not null
);
create index activities_by_deal on activities (workspace_id, opportunity_id, at desc);
