import { fileURLToPath } from "node:url";
import { type Clock, createLogger, type Naming, naming, systemClock } from "@funil/config";
import { SERVICES } from "@funil/contracts";
import { changeEmitter, migrate, openDatabase, type Sql } from "@funil/db";
import { openRedis } from "@funil/db/redis";
import { clientsOf, eventRelayWhenConnected, eventWriter, rpcOptions, startRpcServer } from "@funil/rpc";
import { startTracing, stopTracing, tracingOn } from "@funil/telemetry";
import { buildApp } from "./app.js";
import { authServiceRoutes } from "./auth-service.js";
import { type GatewayConfig, serviceUrl } from "./config.js";
import type { ServiceClients } from "./context.js";
import { keyResolver } from "./key-cache.js";
import { keyChangeJson, workspaceJson } from "./schemas/admin.js";
import { type KeyChange, keyStore, type WorkspaceChange } from "./store/keys.js";

const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

/** The store of workspaces and keys, writing the events of its changes into the gateway's outbox. */
export function keyStoreOf(sql: Sql, names: Naming) {
  const emit = eventWriter(names);
  return keyStore(sql, {
    workspace: changeEmitter<WorkspaceChange>(emit, workspaceJson, (w) => w.updatedAt),
    key: changeEmitter<KeyChange>(emit, keyChangeJson, (k) => k.updatedAt),
  });
}

/** Starts the public HTTP app and the internal Auth service; stop() drains both. */
export async function startGateway(config: GatewayConfig, clock: Clock = systemClock) {
  // First: the clients and the app built below trace only when it is on.
  await startTracing("gateway");
  const log = createLogger("gateway", config.LOG_LEVEL, tracingOn());
  const names = naming(config.FUNIL_ENV);
  const sql = await openDatabase(config.DATABASE_URL, names.database("gateway"), {
    max: config.DATABASE_POOL_MAX,
    idleTimeoutS: config.DATABASE_IDLE_TIMEOUT_S,
  });
  await migrate(sql, migrations);
  const redis = openRedis(config.REDIS_URL, log, "rate limit and key cache run locally");
  // The gateway writes the events of its own changes (workspaces, API keys) like every service: through its
  // outbox, published by its relay onto the EVENTS stream the services create (docs/api/events.md). Its
  // requests never need the bus, so it starts without it: the relay begins once NATS is reached.
  const events = eventRelayWhenConnected({ natsUrl: config.NATS_URL, sql, log, names, name: "gateway" });
  const store = keyStoreOf(sql, names);
  const keys = keyResolver({
    store,
    ttlMs: config.KEY_CACHE_TTL_MS,
    redis,
    channel: `funil:${config.FUNIL_ENV ?? "default"}:keys`,
  });
  // Redis away at start must not keep the gateway down: the key cache then runs on its offline lifetime.
  await Promise.race([keys.ready, new Promise((r) => setTimeout(r, 2000).unref())]);
  const clients = Object.fromEntries(
    (Object.keys(SERVICES) as Array<keyof typeof SERVICES>).map((name) => [
      name,
      clientsOf(SERVICES[name], serviceUrl(config, name), config.UPSTREAM_TIMEOUT_MS, {
        ...rpcOptions(config),
        name,
      }),
    ]),
  ) as ServiceClients;
  const ctx = { ...clients, config, clock, sql, redis, keys, keyStore: store };
  const app = await buildApp(ctx);
  const auth = await startRpcServer({
    port: config.AUTH_PORT,
    host: config.AUTH_HOST,
    log,
    routes: authServiceRoutes(store),
    maxConnectionAgeMs: config.RPC_MAX_CONNECTION_AGE_MS,
    maxMessageBytes: config.RPC_MAX_MESSAGE_BYTES,
  });
  const address = await app.listen({ port: config.PORT, host: config.HOST });
  log.info({ address, authPort: auth.port }, "gateway listening");

  return {
    app,
    ctx,
    url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`,
    authPort: auth.port,
    async stop() {
      app.beginStop();
      if (config.SHUTDOWN_DELAY_MS > 0) await new Promise((r) => setTimeout(r, config.SHUTDOWN_DELAY_MS));
      await app.close();
      await auth.close();
      await keys.close();
      redis.removeAllListeners("close");
      redis.disconnect();
      await events.stop();
      await sql.end({ timeout: 5 });
      await stopTracing();
    },
  };
}
