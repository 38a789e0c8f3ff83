import { pageLimit, plannedPerCall, type Sql } from "@funil/db";
import type { Actor, Direction } from "../actor.js";
import type { Assignment, InteractionRecord } from "../ingest.js";

/**
 * An interaction as listed: with its conversation's current owner, and its createdAt already the API's
 * text (ISO 8601 in UTC with milliseconds, docs/api/conventions.md), because the page only formats it:
 * parsing a Date per row and formatting it again was most of the page's conversion work.
 */
export interface InteractionRow extends Omit<InteractionRecord, "createdAt"> {
  createdAt: string;
  conversationAssigneeUserId: string | null;
}

export interface InteractionFilters {
  contactId?: string;
  userId?: string;
  channels?: string[];
  direction?: Direction;
  actor?: Actor;
  createdAfter?: Date;
  createdBefore?: Date;
}

// The conversation's owner is looked up for each row of the page, not joined: a join let the planner
// hash every conversation of the workspace and sort, where the page's index already gives the order.
const columns = (sql: Sql) => sql`
  i.workspace_id, i.id, i.kind, i.channel, i.direction, i.actor, i.user_id, i.contact_id, i.opportunity_id,
  i.conversation_id,
  (select c.assignee_user_id from conversations c
    where c.workspace_id = i.workspace_id and c.id = i.conversation_id) as conversation_assignee_user_id,
  i.channel_instance_id, i.sender_phone,
  to_char(i.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
  i.duration_sec, i.status, i.preview`;

const rowOf = (r: InteractionRecord) => ({
  workspace_id: r.workspaceId,
  id: r.id,
  kind: r.kind,
  channel: r.channel,
  direction: r.direction,
  actor: r.actor,
  user_id: r.userId,
  contact_id: r.contactId,
  opportunity_id: r.opportunityId,
  conversation_id: r.conversationId,
  channel_instance_id: r.channelInstanceId,
  sender_phone: r.senderPhone,
  created_at: r.createdAt,
  duration_sec: r.durationSec,
  status: r.status,
  preview: r.preview,
});

/** Each interaction once (the first of a repeated `<source>:<rowId>`), in key order. */
function distinctInteractions(records: InteractionRecord[]) {
  const byKey = new Map<string, InteractionRecord>();
  for (const r of records) {
    const key = `${r.workspaceId}\u0000${r.id}`;
    if (!byKey.has(key)) byKey.set(key, r);
  }
  return [...byKey.values()].map(rowOf);
}

/**
 * The latest assignment per conversation (the first of equal instants, as
 * one at a time would keep): a statement may update a row only once.
 */
function latestAssignments(assignments: Assignment[]) {
  const byKey = new Map<string, Assignment>();
  for (const a of assignments) {
    const key = `${a.workspaceId}\u0000${a.conversationId}`;
    const known = byKey.get(key);
    if (!known || known.at < a.at) byKey.set(key, a);
  }
  return [...byKey.values()].map((a) => ({
    workspace_id: a.workspaceId,
    id: a.conversationId,
    assignee_user_id: a.assigneeUserId,
    assigned_at: a.at,
  }));
}

/**
 * GET /interactions' page: keyset in (createdAt desc, id desc) order (docs/api/interactions.md §The 12 rules of the
 * timeline, rule 2), after the position given. Each filter has an index in that order: the workspace's, a contact's,
 * a user's, one channel's or one actor's; direction filters the rows it walks. The page size is written into the
 * statement (pageLimit) so that PostgreSQL keeps its plan, which walks the same index as the one made for the values
 * (explain.test.ts holds both). Several channels over the whole workspace are the exception: no index gives their rows
 * in order, so a rare set is best read by interactions_by_channel and sorted, a common one by walking the workspace's
 * order, and the plan PostgreSQL keeps after five calls, even with the page size a parameter, walks the workspace for
 * every set; that statement is sent unnamed (plannedPerCall), planned for its values at every call. With a contact or
 * a user, several channels filter the rows of that one's index, which every plan walks: kept like the others.
 */
export function listQuery(
  sql: Sql,
  workspaceId: string,
  f: InteractionFilters,
  limit: number,
  after?: [Date, string],
) {
  const channels = f.channels && [...new Set(f.channels)];
  const c = [sql`i.workspace_id = ${workspaceId}`];
  if (f.contactId) c.push(sql`i.contact_id = ${f.contactId}`);
  if (f.userId) c.push(sql`i.user_id = ${f.userId}`);
  if (channels?.length === 1) c.push(sql`i.channel = ${channels[0]!}`);
  else if (channels) c.push(sql`i.channel = any(${channels})`);
  if (f.direction) c.push(sql`i.direction = ${f.direction}`);
  if (f.actor) c.push(sql`i.actor = ${f.actor}`);
  if (f.createdAfter) c.push(sql`i.created_at > ${f.createdAfter}`);
  if (f.createdBefore) c.push(sql`i.created_at < ${f.createdBefore}`);
  if (after) c.push(sql`(i.created_at, i.id) < (${after[0]}, ${after[1]})`);
  const where = c.reduce((acc, x) => sql`${acc} and ${x}`);
  const planned = !channels || channels.length === 1 || f.contactId !== undefined || f.userId !== undefined;
  const query = sql<InteractionRow[]>`
    select ${columns(sql)}
    from interactions i
    where ${where}
    order by i.created_at desc, i.id desc
    ${pageLimit(sql, limit, planned)}`;
  return planned ? query : plannedPerCall(query);
}

export function interactionStore(sql: Sql) {
  /**
   * Stores a batch in one statement (so one commit): each interaction once
   * per `<source>:<rowId>` (a repeat changes nothing); the human-touch
   * summary of each contact with new actor=user interactions widened once,
   * by the batch's earliest and latest (least/greatest give the same summary
   * whatever order the interactions arrive in); each conversation's owner
   * moved to the latest assignment unless a later one is already known.
   * Rows are written in key order, so concurrent batches lock them in the
   * same order. An erased contact's interactions are stored without preview and sender phone, and
   * without a summary (docs/api/contacts.md §POST /contacts/{id}/erase). Returns how many interactions were new.
   */
  async function store(records: InteractionRecord[], assignments: Assignment[] = []): Promise<number> {
    const [row] = await sql<{ added: number }[]>`
      with added as (
        insert into interactions (workspace_id, id, kind, channel, direction, actor, user_id, contact_id,
          opportunity_id, conversation_id, channel_instance_id, sender_phone, created_at, duration_sec, status,
          preview)
        select r.workspace_id, r.id, r.kind, r.channel, r.direction, r.actor, r.user_id, r.contact_id,
          r.opportunity_id, r.conversation_id, r.channel_instance_id,
          case when e.contact_id is null then r.sender_phone end, r.created_at, r.duration_sec, r.status,
          case when e.contact_id is null then r.preview end
        from jsonb_populate_recordset(null::interactions, ${sql.json(distinctInteractions(records))}) r
        left join erased_contacts e on e.workspace_id = r.workspace_id and e.contact_id = r.contact_id
        order by r.workspace_id, r.id
        on conflict do nothing
        returning workspace_id, contact_id, created_at, actor
      ), touched as (
        insert into contact_touches (workspace_id, contact_id, first_at, last_at)
        select workspace_id, contact_id, min(created_at), max(created_at) from added a
        where actor = 'user'
          and not exists (
            select 1 from erased_contacts e where e.workspace_id = a.workspace_id and e.contact_id = a.contact_id)
        group by workspace_id, contact_id
        order by workspace_id, contact_id
        on conflict (workspace_id, contact_id) do update
          set first_at = least(contact_touches.first_at, excluded.first_at),
              last_at = greatest(contact_touches.last_at, excluded.last_at)
      ), assigned as (
        insert into conversations (workspace_id, id, assignee_user_id, assigned_at)
        select workspace_id, id, assignee_user_id, assigned_at
        from jsonb_populate_recordset(null::conversations, ${sql.json(latestAssignments(assignments))})
        order by workspace_id, id
        on conflict (workspace_id, id) do update
          set assignee_user_id = excluded.assignee_user_id, assigned_at = excluded.assigned_at
          where conversations.assigned_at < excluded.assigned_at
      )
      select count(*)::int as added from added`;
    return row!.added;
  }

  return {
    store,

    /** The conversation's owner moves to `a` unless a later assignment is already known. */
    assign: (a: Assignment) => store([], [a]),

    /** Stores one interaction (and the assignment it shows); returns whether it was new. */
    async add(r: InteractionRecord, assignment?: Assignment): Promise<boolean> {
      return (await store([r], assignment ? [assignment] : [])) === 1;
    },

    /** Keyset page in (createdAt desc, id desc) order after the position given (listQuery). */
    list: (workspaceId: string, f: InteractionFilters, limit: number, after?: [Date, string]) =>
      listQuery(sql, workspaceId, f, limit, after),
  };
}
export type InteractionStore = ReturnType<typeof interactionStore>;
