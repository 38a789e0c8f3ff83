import type { Sql } from "@funil/db";
import type { Actor, Direction } from "../actor.js";
import type { Assignment, InteractionRecord } from "../ingest.js";

/** An interaction as listed: with its conversation's current owner. */
export interface InteractionRow extends InteractionRecord {
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

const columns = (sql: Sql) => sql`
  i.workspace_id, i.id, i.kind, i.channel, i.direction, i.actor, i.user_id, i.contact_id, i.opportunity_id,
  i.conversation_id, c.assignee_user_id as conversation_assignee_user_id, i.channel_instance_id,
  i.sender_phone, i.created_at, i.duration_sec, i.status, i.preview`;

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

export function interactionStore(sql: Sql) {
  /**
   * The conversation's owner moves to `a` unless a later assignment is
   * already known: assignments may arrive in any order.
   */
  const assign = (a: Assignment) => sql`
    insert into conversations (workspace_id, id, assignee_user_id, assigned_at)
    values (${a.workspaceId}, ${a.conversationId}, ${a.assigneeUserId}, ${a.at})
    on conflict (workspace_id, id) do update
      set assignee_user_id = excluded.assignee_user_id, assigned_at = excluded.assigned_at
      where conversations.assigned_at < excluded.assigned_at`;

  return {
    assign,

    /**
     * Stores an interaction once per `<source>:<rowId>` (a repeat changes
     * nothing) and, in the same statement, widens its contact's human-touch
     * summary when it is a new actor=user one: least/greatest give the same
     * summary whatever order the interactions arrive in. Returns whether it
     * was new.
     */
    async add(r: InteractionRecord, assignment?: Assignment): Promise<boolean> {
      const [row] = await sql<{ added: number }[]>`
        with added as (
          insert into interactions ${sql(rowOf(r))} on conflict do nothing
          returning workspace_id, contact_id, created_at, actor
        ), touched as (
          insert into contact_touches (workspace_id, contact_id, first_at, last_at)
          select workspace_id, contact_id, created_at, created_at from added where actor = 'user'
          on conflict (workspace_id, contact_id) do update
            set first_at = least(contact_touches.first_at, excluded.first_at),
                last_at = greatest(contact_touches.last_at, excluded.last_at)
        )
        select count(*)::int as added from added`;
      if (assignment) await assign(assignment);
      return row!.added === 1;
    },

    /** Keyset page in (createdAt desc, id desc) order (SPEC.md rule 2), after the position given. */
    async list(workspaceId: string, f: InteractionFilters, limit: number, after?: [Date, string]) {
      const c = [sql`i.workspace_id = ${workspaceId}`];
      if (f.contactId) c.push(sql`i.contact_id = ${f.contactId}`);
      if (f.userId) c.push(sql`i.user_id = ${f.userId}`);
      if (f.channels) c.push(sql`i.channel = any(${f.channels})`);
      if (f.direction) c.push(sql`i.direction = ${f.direction}`);
      if (f.actor) c.push(sql`i.actor = ${f.actor}`);
      if (f.createdAfter) c.push(sql`i.created_at > ${f.createdAfter}`);
      if (f.createdBefore) c.push(sql`i.created_at < ${f.createdBefore}`);
      if (after) c.push(sql`(i.created_at, i.id) < (${after[0]}, ${after[1]})`);
      const where = c.reduce((acc, x) => sql`${acc} and ${x}`);
      return sql<InteractionRow[]>`
        select ${columns(sql)}
        from interactions i
        left join conversations c on c.workspace_id = i.workspace_id and c.id = i.conversation_id
        where ${where}
        order by i.created_at desc, i.id desc
        limit ${limit}`;
    },
  };
}
export type InteractionStore = ReturnType<typeof interactionStore>;
