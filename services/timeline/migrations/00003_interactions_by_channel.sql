-- GET /interactions?channel= of one channel (docs/api/interactions.md §GET /interactions): the channel's interactions
-- of a workspace in the list's order. Through interactions_by_created a channel rare in its workspace (calls or
-- facebook beside WhatsApp) walked every interaction of the workspace for a page (bench/EXPLAIN-timeline.md); here
-- a page reads only its rows. Several channels are planned for their values at each call: a rare set reads its rows
-- here and sorts only those, a common one walks interactions_by_created.
create index interactions_by_channel on interactions (workspace_id, channel, created_at desc, id desc);
