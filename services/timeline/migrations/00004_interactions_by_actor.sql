-- GET /interactions?actor= (docs/api/interactions.md §GET /interactions): the actor's interactions of a workspace in
-- the list's order. Through interactions_by_created an actor rare in its workspace (api, system, unknown beside the
-- contact's and the IA's) walked every interaction of the workspace for a page (bench/EXPLAIN-timeline.md); here a
-- page reads only its rows, and speed-to-lead (direction=outbound&actor=user) only the users' rows.
create index interactions_by_actor on interactions (workspace_id, actor, created_at desc, id desc);
