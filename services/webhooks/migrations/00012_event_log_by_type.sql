-- GET /events?type= (docs/api/events.md §Catch-up: GET /events): the events of one type of a workspace after
-- a position, in the stream's order. Through event_log_by_workspace a poller of a type that is rare in its
-- workspace walked every event since its last match at each call (25 ms for no match in 50 000 events);
-- here it reads only its matches. Several types, or none asked, still walk event_log_by_workspace.
create index event_log_by_type on event_log (workspace_id, type, seq);
