-- The funnel reads (workspace, pipeline, created_at) ranges and only needs stage, status and value:
-- a covering index lets its aggregate be an index-only scan however many deals a workspace has.
create index opportunities_funnel on opportunities (workspace_id, pipeline_id, created_at)
  include (stage_id, status, value_cents) where trashed_at is null;
