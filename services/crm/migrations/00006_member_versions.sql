-- A member's version counts the updates that changed it, raised by a trigger so that no update path can
-- leave it behind: GET /members reads each member's id and version, and a copy of crm answers from memory
-- the members it holds at that version (keptRecords in packages/db), reading the others again.
alter table members add column version integer not null default 0;

create function members_raise_version() returns trigger language plpgsql as $$
begin
  new.version := old.version + 1;
  return new;
end
$$;

create trigger members_version before update on members
  for each row when (old.* is distinct from new.*) execute function members_raise_version();
