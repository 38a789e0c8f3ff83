import { fileURLToPath } from "node:url";
import { connectBus, ensureStreams, publisher } from "@funil/bus";
import { type Clock, createLogger, naming, systemClock } from "@funil/config";
import { ContactSchema } from "@funil/contracts";
import { migrate, openDatabase, startOutboxRelay, writeEvent } from "@funil/db";
import { startRpcServer, toApiJson } from "@funil/rpc";
import type { CrmConfig } from "./config.js";
import { contactToProto } from "./rpc/contacts.js";
import { routes } from "./rpc/routes.js";
import { contactStore } from "./store/contacts.js";
import { customFieldStore } from "./store/custom-fields.js";
import { memberStore } from "./store/members.js";

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
  const relay = startOutboxRelay({
    sql,
    publish: publisher(nc),
    onError: (err) => log.warn({ err }, "outbox relay: publish failed, will retry"),
  });
  const server = await startRpcServer({
    port: config.CRM_PORT,
    host: config.HOST,
    log,
    routes: routes({ contacts, customFields: customFieldStore(sql), members: memberStore(sql), clock }),
  });
  log.info({ port: server.port }, "crm listening");

  return {
    port: server.port,
    sql,
    relay,
    async stop() {
      await server.close();
      await relay.stop();
      await nc.drain();
      await sql.end({ timeout: 5 });
    },
  };
}
