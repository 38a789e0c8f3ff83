import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { connectBus, ensureStreams, publisher } from "@funil/bus";
import { type Clock, createLogger, naming, systemClock } from "@funil/config";
import { ContactSchema, PipelineSchema } from "@funil/contracts";
import { migrate, openDatabase, startIdempotencyCleanup, startOutboxRelay, writeEvent } from "@funil/db";
import { startRpcServer, toApiJson } from "@funil/rpc";
import type { CrmConfig } from "./config.js";
import { contactToProto } from "./rpc/contacts.js";
import { dealJson, pipelineToProto } from "./rpc/deals.js";
import { routes } from "./rpc/routes.js";
import { noteJson, taskJson } from "./rpc/tasks.js";
import { contactStore } from "./store/contacts.js";
import { customFieldStore } from "./store/custom-fields.js";
import { dealStore } from "./store/deals.js";
import { funnelStore } from "./store/funnel.js";
import { memberStore } from "./store/members.js";
import { noteStore } from "./store/notes.js";
import { pipelineStore } from "./store/pipelines.js";
import { taskStore } from "./store/tasks.js";

const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

/** Wires the crm service: database, bus, outbox relay and the Connect server. */
export async function startCrm(config: CrmConfig, clock: Clock = systemClock) {
  const log = createLogger("crm", config.LOG_LEVEL);
  const names = naming(config.FUNIL_ENV);
  const sql = await openDatabase(config.DATABASE_URL, names.database("crm"));
  await migrate(sql, migrations);
  const nc = await connectBus(config.NATS_URL, "crm");
  await ensureStreams(nc, names);

  const subjectOf = (type: string) => names.subject(`events.${type}`);
  const contacts = contactStore(sql, async (tx, type, contact) => {
    await writeEvent(tx, subjectOf, {
      type,
      workspaceId: contact.workspaceId,
      occurredAt: contact.updatedAt,
      data: toApiJson(ContactSchema, contactToProto(contact)),
    });
  });
  // Event data is the resource as the API returns it (API.md §11), written in the change's transaction.
  const pipelines = pipelineStore(sql, async (tx, type, pipeline) => {
    await writeEvent(tx, subjectOf, {
      type,
      workspaceId: pipeline.workspaceId,
      occurredAt: pipeline.createdAt,
      data: toApiJson(PipelineSchema, create(PipelineSchema, pipelineToProto(pipeline))),
    });
  });
  const deals = dealStore(sql, pipelines, async (tx, type, deal) => {
    await writeEvent(tx, subjectOf, {
      type,
      workspaceId: deal.workspaceId,
      occurredAt: deal.updatedAt,
      data: dealJson(deal),
    });
  });
  const tasks = taskStore(sql, async (tx, type, task) => {
    await writeEvent(tx, subjectOf, {
      type,
      workspaceId: task.workspaceId,
      occurredAt: task.updatedAt,
      data: taskJson(task),
    });
  });
  const notes = noteStore(sql, async (tx, type, note) => {
    await writeEvent(tx, subjectOf, {
      type,
      workspaceId: note.workspaceId,
      occurredAt: note.createdAt,
      data: noteJson(note),
    });
  });
  // Idempotency keys are remembered 24 h (API.md §9); older rows are swept here.
  const idempotencyCleanup = startIdempotencyCleanup({
    sql,
    now: () => clock.now(),
    onError: (err) => log.warn({ err }, "idempotency cleanup failed, will retry"),
  });
  const relay = startOutboxRelay({
    sql,
    publish: publisher(nc),
    onError: (err) => log.warn({ err }, "outbox relay: publish failed, will retry"),
  });
  const server = await startRpcServer({
    port: config.CRM_PORT,
    host: config.HOST,
    log,
    routes: routes({
      contacts,
      customFields: customFieldStore(sql),
      members: memberStore(sql),
      pipelines,
      deals,
      funnel: funnelStore(sql),
      tasks,
      notes,
      clock,
    }),
  });
  log.info({ port: server.port }, "crm listening");

  return {
    port: server.port,
    sql,
    relay,
    async stop() {
      await server.close();
      idempotencyCleanup.stop();
      await relay.stop();
      await nc.drain();
      await sql.end({ timeout: 5 });
    },
  };
}
