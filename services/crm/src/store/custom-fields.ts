import { type EmitChange, isUniqueViolation, keptRecords, newId, type Origin, type Sql } from "@funil/db";
import { fail } from "@funil/errors";
import type { FieldType } from "../custom-fields.js";

export interface CustomFieldRecord {
  id: string;
  entity: "contact" | "opportunity";
  fieldKey: string;
  label: string;
  type: FieldType;
  options: string[];
  createdAt: Date;
}

/** Internal events (docs/api/events.md §Every event type): every custom field's creation is in GET /audit. */
export type EmitCustomFieldEvent = EmitChange<
  "custom_field.created",
  CustomFieldRecord & { workspaceId: string }
>;

export function customFieldStore(sql: Sql, emit: EmitCustomFieldEvent) {
  /** Definitions kept in memory: a custom field never changes once created (there is no update). */
  const kept = keptRecords<CustomFieldRecord, string>({
    read: (workspaceId, ids) => sql<CustomFieldRecord[]>`
      select id, entity, field_key, label, type, options, created_at from custom_field_defs
      where workspace_id = ${workspaceId} and id = any(${ids as string[]})`,
    refs: (workspaceId, entity) => sql<{ id: string }[]>`
      select id from custom_field_defs
      where workspace_id = ${workspaceId} ${entity ? sql`and entity = ${entity}` : sql``}
      order by entity, created_at, id`,
  });
  return {
    async create(
      workspaceId: string,
      def: Omit<CustomFieldRecord, "id" | "createdAt">,
      now: Date,
      by: Origin,
    ) {
      try {
        return await sql.begin(async (tx) => {
          const [row] = await tx<CustomFieldRecord[]>`
          insert into custom_field_defs ${tx({
            id: newId("cf", now.getTime()),
            workspace_id: workspaceId,
            entity: def.entity,
            field_key: def.fieldKey,
            label: def.label,
            type: def.type,
            options: def.options,
            created_at: now,
          })} returning id, entity, field_key, label, type, options, created_at`;
          await emit(tx, "custom_field.created", { ...row!, workspaceId }, by);
          return row!;
        });
      } catch (err) {
        if (isUniqueViolation(err))
          throw fail(
            "conflict",
            `a ${def.entity} custom field with fieldKey "${def.fieldKey}" already exists`,
          );
        throw err;
      }
    },
    /**
     * The workspace's definitions (of one entity when given), by entity, then in creation order. Only their
     * ids are read each time (the definitions already in memory are the rows), once for the same list asked
     * in the same turn; the others in one statement.
     */
    async list(workspaceId: string, entity?: string): Promise<CustomFieldRecord[]> {
      return kept.list(workspaceId, entity);
    },
  };
}
export type CustomFieldStore = ReturnType<typeof customFieldStore>;
