-- Workspaces and their API keys (docs/api/conventions.md §Authentication and API keys). Keys are stored only as SHA-256 hashes.
create table workspaces (
  id text primary key,
  name text not null,
  operator boolean not null default false,
  created_at timestamptz not null,
  updated_at timestamptz not null
);

create table api_keys (
  id text primary key,
  workspace_id text not null references workspaces (id),
  name text not null,
  prefix text not null,
  hash text not null unique,
  scopes text[] not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  revoked_at timestamptz
);
create index api_keys_by_workspace on api_keys (workspace_id, created_at, id);
