-- Contacts crm erased (docs/api/contacts.md §POST /contacts/{id}/erase). An interaction of one of them ingested after its
-- erasure is stored without its preview and sender phone, and no touch summary is kept for it again.
create table erased_contacts (
  workspace_id text not null,
  contact_id text not null,
  erased_at timestamptz not null,
  primary key (workspace_id, contact_id)
);
