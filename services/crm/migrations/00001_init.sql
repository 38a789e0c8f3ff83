-- Contacts, custom-field definitions and members (docs/api/contacts.md §GET /members, §Contact).
create extension if not exists pg_trgm;

create table contacts (
  id text primary key,
  workspace_id text not null,
  name text,
  phone text,
  -- Phone reduced to digits and e-mail lower-cased: the uniqueness keys (docs/api/contacts.md §Contact).
  phone_digits text,
  email text,
  email_lower text,
  company text,
  company_id text,
  role text,
  cpf text,
  notes text,
  tags text[] not null default '{}',
  status text not null default 'active' check (status in ('active', 'archived')),
  owner_user_id text,
  origin text,
  custom_fields jsonb not null default '{}',
  url text,
  utm jsonb not null default '{}',
  -- Lower-case, accent-free name, e-mail, phone and company for `query`.
  search text not null default '',
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create unique index contacts_phone_unique on contacts (workspace_id, phone_digits) where phone_digits is not null;
create unique index contacts_email_unique on contacts (workspace_id, email_lower) where email_lower is not null;
-- Keyset orders of GET /contacts: by creation, or by update when polling with updatedAfter.
create index contacts_by_created on contacts (workspace_id, status, created_at, id);
create index contacts_by_updated on contacts (workspace_id, status, updated_at, id);
create index contacts_tags on contacts using gin (tags);
create index contacts_search on contacts using gin (search gin_trgm_ops);

create table custom_field_defs (
  id text primary key,
  workspace_id text not null,
  entity text not null check (entity in ('contact', 'opportunity')),
  field_key text not null,
  label text not null,
  type text not null check (type in ('text', 'number', 'boolean', 'date', 'select')),
  options text[] not null default '{}',
  created_at timestamptz not null,
  unique (workspace_id, entity, field_key)
);

create table members (
  id text primary key,
  workspace_id text not null,
  name text not null,
  email text not null,
  role text not null,
  active boolean not null default true,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create unique index members_email_unique on members (workspace_id, lower(email));
create index members_by_created on members (workspace_id, created_at, id);
