-- Contacts crm erased (docs/api/contacts.md §POST /contacts/{id}/erase): a booking of one of them whose crm check
-- answered before the erasure is refused in its transaction, as crm refuses it since (store/erasures.ts).
create table erased_contacts (
  workspace_id text not null,
  contact_id text not null,
  erased_at timestamptz not null,
  primary key (workspace_id, contact_id)
);
