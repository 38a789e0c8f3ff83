import type { ConnectRouter } from "@connectrpc/connect";
import {
  type Consumer,
  connectBus,
  ensureStreams,
  type NatsConnection,
  publisher,
  type StreamName,
  watchBus,
} from "@funil/bus";
import { type Clock, createLogger, type Logger, loadConfig, type Naming, naming, z } from "@funil/config";
import {
  idempotencySweep,
  inboxSweep,
  migrate,
  openDatabase,
  type Sql,
  type Sweep,
  startOutboxRelay,
  startSweeps,
  type TransactionSql,
  writeEvent,
} from "@funil/db";
import { startTracing, stopTracing, tracingOn } from "@funil/telemetry";
import { useCursorKeys } from "./cursor.js";
import { causeOf } from "./errors.js";
import type { HealthSources } from "./health.js";
import { startMetricsServer } from "./metrics.js";
import { startRpcServer } from "./server.js";

/** What every service gets from the shared startup, to wire its own rooms with. */
export interface Infra {
  config: ServiceConfig;
  clock: Clock;
  log: Logger;
  names: Naming;
  sql: Sql;
  nc: NatsConnection;
  /** Writes a domain event in the change's transaction (the outbox, docs/api/events.md §Guarantees). */
  emit(
    tx: TransactionSql,
    event: { type: string; workspaceId: string; occurredAt: Date; data: unknown },
  ): Promise<void>;
}

export interface ServiceConfig {
  FUNIL_ENV?: string | undefined;
  DATABASE_POOL_MAX: number;
  DATABASE_IDLE_TIMEOUT_S: number;
  DATABASE_URL: string;
  NATS_URL: string;
  NATS_STREAM_REPLICAS: number;
  LOG_LEVEL: string;
  HOST: string;
  CURSOR_KEYS?: string[] | undefined;
  RPC_MAX_CONNECTION_AGE_MS?: number;
  RPC_MAX_MESSAGE_BYTES?: number;
  /** Where GET /metrics answers (plain HTTP/1.1); unset: nowhere. */
  METRICS_PORT?: number | undefined;
  EVENTS_MAX_AGE_MS: number;
  INGEST_MAX_AGE_MS: number;
  PLATFORM_MAX_AGE_MS: number;
  WEBHOOK_JOBS_MAX_AGE_MS: number;
  INBOX_RETENTION_MS: number;
  RETENTION_SWEEP_MS: number;
}

/**
 * Each stream's max_age from the settings. An inbox kept for less time than a stream keeps a message
 * would forget a message that can still come again (a consumer reset, a redelivery): the start refuses it.
 */
export function streamMaxAges(config: ServiceConfig): Record<StreamName, number> {
  const ages: Record<StreamName, number> = {
    EVENTS: config.EVENTS_MAX_AGE_MS,
    INGEST: config.INGEST_MAX_AGE_MS,
    PLATFORM: config.PLATFORM_MAX_AGE_MS,
    WEBHOOK_DELIVERIES: config.WEBHOOK_JOBS_MAX_AGE_MS,
  };
  const longest = Math.max(...Object.values(ages));
  if (config.INBOX_RETENTION_MS < longest)
    throw new Error(
      `INBOX_RETENTION_MS (${config.INBOX_RETENTION_MS}) must be at least the longest stream max age (${longest})`,
    );
  return ages;
}

export interface Wired {
  routes: (router: ConnectRouter) => void;
  /**
   * The service's own background work (consumers…), stopped as soon as the process is asked to stop,
   * while the server answers the calls it has read: it takes no new work, finishes or hands back what
   * it holds.
   */
  stop?: () => Promise<void>;
  /** What the handlers use besides the database (a Redis client), released once the server answered all. */
  release?: () => Promise<void>;
  /** Its consumers, whose redeliveries and lag the HealthService reports (/metrics). */
  consumers?: Consumer[];
  /** Its own dependencies, reported by the HealthService beside the database and the bus. */
  dependencies?: HealthSources["dependencies"];
  /** What it keeps only for a while, swept beside the inbox and the idempotency keys. */
  sweeps?: Sweep[];
}

/**
 * The start of every service (docs/architecture.md §A service, room by room): its
 * database created and migrated, the bus and its streams, the outbox relay,
 * the retention sweeps, the HealthService (/readyz, /metrics), then `wire` builds the service's stores and
 * handlers on top, and its Connect server listens. stop() undoes it all in
 * reverse, letting calls in flight finish.
 */
export async function startService(opts: ServiceStart) {
  const { name, config, clock } = opts;
  // First: the clients and the server built below trace only when it is on.
  await startTracing(name);
  const log = createLogger(name, config.LOG_LEVEL, tracingOn());
  useCursorKeys(config.CURSOR_KEYS, (message) => log.warn(message));
  const names = naming(config.FUNIL_ENV);
  const { sql, nc } = await connectStores(opts, names);
  const infra: Infra = {
    config,
    clock,
    log,
    names,
    sql,
    nc,
    emit: eventWriter(names),
  };
  const wired = await opts.wire(infra);
  const { sweeps, relay, bus } = startChores(infra, opts.name, wired.sweeps ?? []);
  const server = await startRpcServer({
    port: opts.port,
    host: config.HOST,
    log,
    routes: wired.routes,
    maxConnectionAgeMs: config.RPC_MAX_CONNECTION_AGE_MS,
    maxMessageBytes: config.RPC_MAX_MESSAGE_BYTES,
    health: { service: name, sql, bus, relay, consumers: wired.consumers, dependencies: wired.dependencies },
  });
  const metrics =
    config.METRICS_PORT === undefined
      ? undefined
      : await startMetricsServer({ name, port: config.METRICS_PORT, host: config.HOST });
  log.info({ port: server.port, metricsPort: metrics?.port }, `${name} listening`);

  return {
    port: server.port,
    metricsPort: metrics?.port,
    sql,
    nc,
    relay,
    log,
    /**
     * The server reports not serving and answers every call it has read while the consumers stop pulling
     * and finish or hand back what they hold; then the outbox relay publishes what those last writes
     * left, and the bus and the database close.
     */
    async stop() {
      await Promise.all([server.close(), wired.stop?.()]);
      await wired.release?.();
      await metrics?.close();
      await sweeps.stop();
      await relay.stop();
      await nc.drain();
      await sql.end({ timeout: 5 });
      await stopTracing();
    },
  };
}

/** How a service starts: its name, settings and migrations, and how its rooms are wired. */
interface ServiceStart {
  name: string;
  config: ServiceConfig;
  port: number;
  clock: Clock;
  migrations: string;
  /** Plan every statement afresh (openDatabase's customPlans). */
  customPlans?: boolean;
  wire: (infra: Infra) => Wired | Promise<Wired>;
}

/** The service's database, created and migrated, and the bus with its streams, each kept for its max age. */
async function connectStores(opts: ServiceStart, names: Naming) {
  const { name, config } = opts;
  const sql = await openDatabase(config.DATABASE_URL, names.database(name), {
    max: config.DATABASE_POOL_MAX,
    idleTimeoutS: config.DATABASE_IDLE_TIMEOUT_S,
    customPlans: opts.customPlans,
  });
  await migrate(sql, opts.migrations);
  const nc = await connectBus(config.NATS_URL, name);
  await ensureStreams(nc, names, undefined, {
    replicas: config.NATS_STREAM_REPLICAS,
    maxAgeMs: streamMaxAges(config),
  });
  return { sql, nc };
}

/** The work every service does besides its calls: the retention sweeps, the outbox relay, the bus watch. */
function startChores(infra: Infra, name: string, own: Sweep[]) {
  const { sql, clock, log, nc, config, names } = infra;
  // What the process keeps only for a while (docs/operations.md §Retention): idempotency keys (24 h),
  // the inbox, and the service's own.
  const sweeps = startSweeps({
    sql,
    now: () => clock.now(),
    intervalMs: config.RETENTION_SWEEP_MS,
    sweeps: [idempotencySweep(), inboxSweep(config.INBOX_RETENTION_MS), ...own],
    onSwept: (sweep, rows) => log.debug({ sweep, rows }, "retention: swept"),
    onError: (sweep, err) => log.warn({ sweep, cause: causeOf(err) }, "retention sweep failed, will retry"),
  });
  return { sweeps, ...startEventRelay({ sql, nc, log, names, name }) };
}

/**
 * How a process writes a domain event in its change's transaction (the outbox, docs/api/events.md
 * §Guarantees): on the EVENTS stream's subject of its type.
 */
export function eventWriter(names: Naming): Infra["emit"] {
  return async (tx, event) => {
    await writeEvent(tx, (type) => names.subject(`events.${type}`), event);
  };
}

/**
 * The outbox relay of a process that writes events, and the watch of its bus connection that wakes the
 * relay when the bus is back. An outage is one line when it starts and one when it ends, without a
 * stack: not a bug. The relay runs on one session of its own, opened with the pool's settings (outbox.ts).
 */
export function startEventRelay(opts: {
  sql: Sql;
  nc: NatsConnection;
  log: Logger;
  names: Naming;
  name: string;
}) {
  const { sql, nc, log, names, name } = opts;
  const relay = startOutboxRelay({
    sql,
    applicationName: `${names.database(name)}:relay`,
    publish: publisher(nc),
    onError: (err) => log.warn({ cause: causeOf(err) }, "outbox relay: publish failing, retrying"),
    onRecover: (r) => log.info(r, "outbox relay: publishing again"),
  });
  const bus = watchBus(nc, { log, onReconnect: relay.wake });
  return { relay, bus };
}
/** How long a process waits between attempts to reach NATS at start (eventRelayWhenConnected). */
const BUS_RETRY_MS = 1000;

/**
 * The outbox relay of a process whose requests do not need the bus (the gateway): NATS away when it starts
 * must not keep it down, nor make it exit and be restarted in a loop while the bus is out. It starts at once;
 * its events wait in its outbox (the writes that make them still commit) while it tries to reach NATS every
 * second in the background, one line when the first attempt fails and one when the bus is reached; then
 * the relay starts and publishes what waited. stop() ends an attempt in progress (at most the connect
 * timeout, 5 s) and stops the relay.
 */
export function eventRelayWhenConnected(opts: {
  natsUrl: string;
  sql: Sql;
  log: Logger;
  names: Naming;
  name: string;
}) {
  const { log } = opts;
  let stopped = false;
  let wake: (() => void) | undefined;
  let started: { nc: NatsConnection; relay: ReturnType<typeof startOutboxRelay> } | undefined;
  const connecting = (async () => {
    let failed = false;
    while (!stopped) {
      try {
        const nc = await connectBus(opts.natsUrl, opts.name);
        if (stopped) return void (await nc.close());
        started = { nc, relay: startEventRelay({ ...opts, nc }).relay };
        if (failed) log.info({}, "NATS reached: the outbox relay publishes the events that waited");
        return;
      } catch (err) {
        if (!failed)
          log.warn({ cause: causeOf(err) }, "NATS unavailable at start: events wait in the outbox");
        failed = true;
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, BUS_RETRY_MS).unref();
        });
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake?.();
      await connecting;
      if (!started) return;
      await started.relay.stop();
      await started.nc.drain();
    },
  };
}
export type StartedService = Awaited<ReturnType<typeof startService>>;

const shutdownEnv = z.object({
  /** How long a process may take to stop after SIGTERM before it exits anyway. */
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(1).default(20_000),
});

/**
 * Bounds a process's stop() by SHUTDOWN_TIMEOUT_MS (default 20 s): an orchestrator kills a process that
 * outlives its grace period, so one that cannot finish (a webhook receiver that hangs, a database that
 * does not answer) exits on its own first, with a line saying so, and exit code 1. Whatever it had not
 * finished is found again by the others: unacknowledged messages come back, outbox rows stay.
 */
export function stoppingWithin<C, R extends { stop(): Promise<void> }>(
  name: string,
  start: (config: C, clock: Clock) => Promise<R>,
): (config: C, clock: Clock) => Promise<R> {
  return async (config, clock) => {
    const { SHUTDOWN_TIMEOUT_MS } = loadConfig(shutdownEnv);
    const running = await start(config, clock);
    return {
      ...running,
      stop: () =>
        new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => {
            const level = (config as { LOG_LEVEL?: string }).LOG_LEVEL ?? "info";
            createLogger(name, level).error(
              { timeoutMs: SHUTDOWN_TIMEOUT_MS },
              `${name} did not stop within SHUTDOWN_TIMEOUT_MS; exiting anyway`,
            );
            reject(new Error("shutdown timed out"));
          }, SHUTDOWN_TIMEOUT_MS);
          running.stop().then(
            () => {
              clearTimeout(timer);
              resolve();
            },
            (err: unknown) => {
              clearTimeout(timer);
              reject(err);
            },
          );
        }),
    };
  };
}
