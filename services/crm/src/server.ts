import { fileURLToPath } from "node:url";
import type { Clock } from "@funil/config";
import { changedFields, type EventInput, type Origin, type TransactionSql } from "@funil/db";
import { type Infra, startService } from "@funil/rpc";
import type { CrmConfig } from "./config.js";
import { type CrmDeps, routes } from "./rpc/routes.js";
import { contactWire, dealWire, noteWire, pipelineWire, taskWire } from "./rpc/wire.js";
import { contactStore } from "./store/contacts.js";
import { customFieldStore } from "./store/custom-fields.js";
import { dealStore } from "./store/deals.js";
import { funnelStore } from "./store/funnel.js";
import { memberStore } from "./store/members.js";
import { noteStore } from "./store/notes.js";
import { pipelineStore } from "./store/pipelines.js";
import { taskStore } from "./store/tasks.js";

export const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

/**
 * An event whose data is the resource as the API returns it, written in the change's transaction, with
 * who made the change and the names of the fields it set or changed (docs/api/events.md §Who made a change).
 */
const emitter =
  <R extends { workspaceId: string }>(
    infra: Pick<Infra, "emit">,
    json: (r: R) => unknown,
    at: (r: R) => Date,
  ) =>
  (tx: TransactionSql, type: string, r: R, by: Origin, before?: R | readonly string[]) => {
    const data = json(r);
    const event: EventInput = {
      type,
      workspaceId: r.workspaceId,
      occurredAt: at(r),
      data,
      origin: by,
      changes: changedFields(
        data,
        before === undefined || Array.isArray(before) ? before : json(before as R),
      ),
    };
    return infra.emit(tx, event);
  };

/** The stores on one database, each emitting its events through the outbox. */
export function crmDeps(infra: Pick<Infra, "sql" | "emit" | "clock">): CrmDeps {
  const { sql, clock } = infra;
  const pipelines = pipelineStore(
    sql,
    emitter(infra, pipelineWire.json, (p) => p.createdAt),
  );
  return {
    sql,
    contacts: contactStore(
      sql,
      emitter(infra, contactWire.json, (c) => c.updatedAt),
    ),
    customFields: customFieldStore(sql),
    members: memberStore(sql),
    pipelines,
    deals: dealStore(
      sql,
      pipelines,
      emitter(infra, dealWire.json, (d) => d.updatedAt),
    ),
    funnel: funnelStore(sql),
    tasks: taskStore(
      sql,
      emitter(infra, taskWire.json, (t) => t.updatedAt),
    ),
    notes: noteStore(
      sql,
      emitter(infra, noteWire.json, (n) => n.createdAt),
    ),
    clock,
  };
}

/** crm: contacts, deals, pipelines, funnel, tasks, notes, custom fields and members. */
export function start(config: CrmConfig, clock: Clock) {
  return startService({
    name: "crm",
    config,
    port: config.CRM_PORT,
    clock,
    migrations,
    wire: (infra) => ({ routes: routes(crmDeps(infra)) }),
  });
}
