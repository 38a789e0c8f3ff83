-- Who made each change (docs/api/events.md §Who made a change, §Audit: GET /audit): the event log keeps
-- every event of EVENTS, internal ones included, with its entity, its actor (key:<id>, admin, system), the
-- gateway's request id and the names of the fields it changed. Rows logged before these columns existed
-- keep nulls and are not listed by GET /audit.
alter table event_log
  add column entity_type text,
  add column entity_id text,
  add column actor text,
  add column request_id text,
  add column changes text[];
-- GET /audit?entity=&id= reads one entity's changes of a workspace in the stream's order.
create index event_log_by_entity on event_log (workspace_id, entity_type, entity_id, seq);
