import type { DescService } from "@bufbuild/protobuf";
import { type Client, type ConnectRouter, createClient, type ServiceImpl } from "@connectrpc/connect";
import { type Clock, ConfigError, loadConfig, systemClock, type z } from "@funil/config";
import { packageOf, type RpcOptions, rpcTransport } from "./client.js";

type ServiceSet = Record<string, DescService>;

/** One typed client per Connect service of a set (an entry of SERVICES), all at one base URL. */
export type Clients<S extends ServiceSet> = { [K in keyof S]: Client<S[K]> };

/**
 * The clients share one transport: one connection and one batch channel per copy of the service, so
 * that the calls of one turn to any of its Connect services travel in one batch.
 */
export function clientsOf<S extends ServiceSet>(
  set: S,
  baseUrl: string,
  timeoutMs = 10_000,
  options?: RpcOptions,
): Clients<S> {
  const first = Object.values(set)[0];
  const transport = rpcTransport(baseUrl, timeoutMs, first ? packageOf(first) : baseUrl, options);
  return Object.fromEntries(
    Object.entries(set).map(([name, service]) => [name, createClient(service, transport)]),
  ) as Clients<S>;
}

/** A service's routes: an implementation for every Connect service of its set, no more, no less. */
export function routesOf<S extends ServiceSet>(set: S, impls: { [K in keyof S]: ServiceImpl<S[K]> }) {
  return (router: ConnectRouter) => {
    for (const name of Object.keys(set) as Array<keyof S>)
      router.service(set[name] as DescService, impls[name] as never);
  };
}

export interface Running {
  stop(): Promise<void>;
}

/**
 * main.ts of every service: reads the configuration once (a bad value stops
 * the process naming the variable), starts, and stops cleanly on SIGTERM or
 * SIGINT.
 */
export function runService<S extends z.ZodType>(
  schema: S,
  start: (config: z.output<S>, clock: Clock) => Promise<Running>,
): void {
  const fatal = (err: unknown) => {
    process.stderr.write(
      err instanceof ConfigError
        ? `${err.message}\n`
        : `fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  };
  let running: Running | undefined;
  const stop = () => {
    if (!running) process.exit(0);
    running.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  Promise.resolve()
    .then(() => start(loadConfig(schema), systemClock))
    .then((r) => {
      running = r;
    }, fatal);
}
