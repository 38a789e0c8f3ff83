import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { connectBus, ensureStreams, publisher, watchBus } from "@funil/bus";
import { type Clock, createLogger, naming, systemClock } from "@funil/config";
import { ContactSchema, PipelineSchema } from "@funil/contracts";
import {
  migrate,
  openDatabase,
  startIdempotencyCleanup,
  startOutboxRelay,
  type TransactionSql,
  writeEvent,
} from "@funil/db";
import { causeOf, startRpcServer, toApiJson } from "@funil/rpc";
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
  /** Writes an event whose data is the resource as the API returns it, in the change's transaction. */
  const emitter =
    <R extends { workspaceId: string }>(json: (r: R) => unknown, at: (r: R) => Date) =>
    async (tx: TransactionSql, type: string, r: R) => {
      await writeEvent(tx, subjectOf, { type, workspaceId: r.workspaceId, occurredAt: at(r), data: json(r) });
    };
  const contacts = contactStore(
    sql,
    emitter(
      (c) => toApiJson(ContactSchema, contactToProto(c)),
      (c) => c.updatedAt,
    ),
  );
  const pipelines = pipelineStore(
    sql,
    emitter(
      (p) => toApiJson(PipelineSchema, create(PipelineSchema, pipelineToProto(p))),
      (p) => p.createdAt,
    ),
  );
  const deals = dealStore(
    sql,
    pipelines,
    emitter(dealJson, (d) => d.updatedAt),
  );
  const tasks = taskStore(
    sql,
    emitter(taskJson, (t) => t.updatedAt),
  );
  const notes = noteStore(
    sql,
    emitter(noteJson, (n) => n.createdAt),
  );
  // Idempotency keys are remembered 24 h (API.md §9); older rows are swept here.
  const idempotencyCleanup = startIdempotencyCleanup({
    sql,
    now: () => clock.now(),
    onError: (err) => log.warn({ err }, "idempotency cleanup failed, will retry"),
  });
  const relay = startOutboxRelay({
    sql,
    publish: publisher(nc),
    onError: (err) => log.warn({ cause: causeOf(err) }, "outbox relay: publish failing, retrying"),
    onRecover: (r) => log.info(r, "outbox relay: publishing again"),
  });
  const bus = watchBus(nc, { log, onReconnect: relay.wake });
  const server = await startRpcServer({
    port: config.CRM_PORT,
    host: config.HOST,
    log,
    health: { service: "crm", sql, bus, relay },
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
