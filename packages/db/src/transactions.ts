import { AsyncLocalStorage } from "node:async_hooks";
import type { Sql } from "./client.js";

/**
 * No call leaves the process while a PostgreSQL transaction is open (docs/architecture.md §Rules that
 * keep it real, "No network inside a transaction"): a transaction that waits on an RPC, an HTTP
 * request or Redis holds its connection, its row locks and its advisory locks for as long as the other
 * side takes, and the pool is a few connections. With FUNIL_CHECK_TRANSACTIONS=true (the test runs set
 * it), every transaction's callback runs marked, and the RPC client, the Redis client and the webhook
 * poster ask `outsideTransaction` before each call: a call made inside one throws, naming it, so the
 * test that reaches it fails. Off (the default), no transaction is marked and the question costs a
 * property read.
 */
const open = new AsyncLocalStorage<true>();

/** Whether this process marks its transactions (FUNIL_CHECK_TRANSACTIONS=true). */
export const checkingTransactions = (env: Record<string, string | undefined> = process.env) =>
  env.FUNIL_CHECK_TRANSACTIONS?.trim().toLowerCase() === "true";

/** Thrown when a call leaves the process from inside a transaction (a bug, never a user's error). */
export class CallInTransactionError extends Error {
  constructor(call: string) {
    super(`${call} while a PostgreSQL transaction is open: make it before or after the transaction`);
    this.name = "CallInTransactionError";
  }
}

/** Throws when a marked transaction is open in the caller's async context. */
export function outsideTransaction(call: string): void {
  if (open.getStore()) throw new CallInTransactionError(call);
}

/** Runs `fn` as the body of a transaction: what it starts, awaited or not, is inside it. */
export const asTransactionBody = <T>(fn: () => T): T => open.run(true, fn);

type Fn = (...args: unknown[]) => unknown;

/**
 * The pool, its `begin` marking the transaction's callback when checking; the pool itself otherwise.
 * Savepoints run inside their transaction's callback, so they are marked with it.
 */
export function markingTransactions(sql: Sql, on = checkingTransactions()): Sql {
  if (!on) return sql;
  return new Proxy(sql, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (prop !== "begin" || typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const fn = args[args.length - 1] as Fn;
        args[args.length - 1] = (tx: unknown) => asTransactionBody(() => fn(tx));
        return (value as Fn).apply(target, args);
      };
    },
  });
}

/**
 * A Connect client interceptor that refuses a call made inside a transaction (typed structurally, so
 * this package needs no Connect): packages/rpc puts it first on every client's transport.
 */
export const callsOutsideTransactions =
  <R extends { method: { name: string }; service: { typeName: string } }, O>(next: (req: R) => Promise<O>) =>
  async (req: R): Promise<O> => {
    outsideTransaction(`RPC ${req.service.typeName}/${req.method.name}`);
    return next(req);
  };
