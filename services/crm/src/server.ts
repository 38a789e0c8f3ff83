import { fileURLToPath } from "node:url";
import type { Clock } from "@funil/config";
import { changeEmitter } from "@funil/db";
import { type Infra, startService } from "@funil/rpc";
import type { CrmConfig } from "./config.js";
import { type CrmDeps, routes } from "./rpc/routes.js";
import {
  contactWire,
  customFieldWire,
  dealWire,
  erasureJson,
  memberWire,
  noteWire,
  pipelineWire,
  taskWire,
} from "./rpc/wire.js";
import { contactStore } from "./store/contacts.js";
import { type CustomFieldRecord, customFieldStore } from "./store/custom-fields.js";
import { dealStore } from "./store/deals.js";
import { funnelStore } from "./store/funnel.js";
import { memberStore } from "./store/members.js";
import { noteStore } from "./store/notes.js";
import { pipelineStore } from "./store/pipelines.js";
import { taskStore } from "./store/tasks.js";

export const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

/** The stores on one database, each emitting its events through the outbox. */
export function crmDeps(infra: Pick<Infra, "sql" | "emit" | "clock">): CrmDeps {
  const { sql, clock } = infra;
  const pipelines = pipelineStore(
    sql,
    changeEmitter(infra.emit, pipelineWire.json, (p) => p.createdAt),
  );
  return {
    sql,
    contacts: contactStore(
      sql,
      changeEmitter(infra.emit, contactWire.json, (c) => c.updatedAt),
      changeEmitter(infra.emit, erasureJson, (e) => e.erasedAt),
    ),
    customFields: customFieldStore(
      sql,
      changeEmitter<CustomFieldRecord & { workspaceId: string }>(
        infra.emit,
        customFieldWire.json,
        (f) => f.createdAt,
      ),
    ),
    members: memberStore(
      sql,
      changeEmitter(
        infra.emit,
        (m) => memberWire.json(m),
        (m) => m.updatedAt,
      ),
    ),
    pipelines,
    deals: dealStore(
      sql,
      pipelines,
      changeEmitter(infra.emit, dealWire.json, (d) => d.updatedAt),
    ),
    funnel: funnelStore(sql),
    tasks: taskStore(
      sql,
      changeEmitter(infra.emit, taskWire.json, (t) => t.updatedAt),
    ),
    notes: noteStore(
      sql,
      changeEmitter(infra.emit, noteWire.json, (n) => n.createdAt),
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
