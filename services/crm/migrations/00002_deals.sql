-- Pipelines, stages, deals, tasks and notes (docs/api/deals.md §Deal (opportunity), §Task).
-- Every reference carries the workspace id, so a foreign key can never join rows of two workspaces.

create unique index contacts_workspace_id on contacts (workspace_id, id);
create unique index members_workspace_id on members (workspace_id, id);

create table pipelines (
  id text primary key,
  workspace_id text not null,
  name text not null,
  created_at timestamptz not null,
  unique (workspace_id, id)
);
create index pipelines_by_created on pipelines (workspace_id, created_at, id);

-- Every stage is an open stage: won and lost are deal statuses, not stages.
create table stages (
  id text primary key,
  workspace_id text not null,
  pipeline_id text not null,
  name text not null,
  position int not null,
  unique (pipeline_id, position),
  unique (workspace_id, pipeline_id, id),
  foreign key (workspace_id, pipeline_id) references pipelines (workspace_id, id)
);

create table opportunities (
  id text primary key,
  workspace_id text not null,
  title text not null,
  pipeline_id text not null,
  stage_id text not null,
  contact_id text not null,
  status text not null default 'open' check (status in ('open', 'won', 'lost')),
  value_cents bigint not null default 0 check (value_cents >= 0),
  currency text not null,
  owner_user_id text,
  temperature text,
  tags text[] not null default '{}',
  loss_reason text,
  expected_close_at timestamptz,
  won_at timestamptz,
  lost_at timestamptz,
  custom_fields jsonb not null default '{}',
  source text,
  utm jsonb not null default '{}',
  origin text,
  url text,
  stage_changed_at timestamptz not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  -- Set while the deal is in the trash: invisible to reads, lists and the funnel.
  trashed_at timestamptz,
  unique (workspace_id, id),
  -- wonAt only on won deals, lostAt only on lost ones (the won/lost filters rely on it).
  check ((status = 'won') = (won_at is not null)),
  check ((status = 'lost') = (lost_at is not null)),
  constraint opportunities_stage_fk foreign key (workspace_id, pipeline_id, stage_id)
    references stages (workspace_id, pipeline_id, id),
  constraint opportunities_contact_fk foreign key (workspace_id, contact_id) references contacts (workspace_id, id),
  constraint opportunities_owner_fk foreign key (workspace_id, owner_user_id) references members (workspace_id, id)
);
-- Keyset orders of GET /opportunities (docs/api/conventions.md §Lists and pagination) and one index per equality filter, all without the trash.
create index opportunities_by_created on opportunities (workspace_id, created_at, id) where trashed_at is null;
create index opportunities_by_updated on opportunities (workspace_id, updated_at, id) where trashed_at is null;
create index opportunities_by_pipeline on opportunities (workspace_id, pipeline_id, created_at, id)
  where trashed_at is null;
create index opportunities_by_stage on opportunities (workspace_id, stage_id, created_at, id) where trashed_at is null;
create index opportunities_by_contact on opportunities (workspace_id, contact_id, created_at, id)
  where trashed_at is null;
create index opportunities_by_status on opportunities (workspace_id, status, created_at, id) where trashed_at is null;
create index opportunities_by_won on opportunities (workspace_id, won_at) where trashed_at is null and won_at is not null;
create index opportunities_by_lost on opportunities (workspace_id, lost_at)
  where trashed_at is null and lost_at is not null;
create index opportunities_by_stage_changed on opportunities (workspace_id, stage_changed_at) where trashed_at is null;

create table tasks (
  id text primary key,
  workspace_id text not null,
  title text not null,
  body text,
  contact_id text,
  opportunity_id text,
  assignee_user_id text,
  due_at timestamptz,
  completed_at timestamptz,
  -- The `open` filter: open = not completed.
  done boolean generated always as (completed_at is not null) stored,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  foreign key (workspace_id, contact_id) references contacts (workspace_id, id),
  foreign key (workspace_id, opportunity_id) references opportunities (workspace_id, id),
  foreign key (workspace_id, assignee_user_id) references members (workspace_id, id)
);
create index tasks_by_created on tasks (workspace_id, created_at, id);
create index tasks_by_done on tasks (workspace_id, done, created_at, id);
create index tasks_by_assignee on tasks (workspace_id, assignee_user_id, created_at, id);
create index tasks_by_assignee_done on tasks (workspace_id, assignee_user_id, done, created_at, id);

create table notes (
  id text primary key,
  workspace_id text not null,
  contact_id text not null,
  opportunity_id text,
  body text not null,
  user_id text not null,
  created_at timestamptz not null,
  foreign key (workspace_id, contact_id) references contacts (workspace_id, id),
  foreign key (workspace_id, opportunity_id) references opportunities (workspace_id, id),
  foreign key (workspace_id, user_id) references members (workspace_id, id)
);
create index notes_by_contact on notes (workspace_id, contact_id, created_at, id);
