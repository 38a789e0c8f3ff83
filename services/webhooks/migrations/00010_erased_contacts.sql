-- Contacts crm erased (docs/api/contacts.md §POST /contacts/{id}/erase): an event about one of them fanned out after its
-- erasure (a late or redelivered one) is stored already redacted.
create table erased_contacts (
  workspace_id text not null,
  contact_id text not null,
  erased_at timestamptz not null,
  primary key (workspace_id, contact_id)
);
