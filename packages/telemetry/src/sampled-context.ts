import { AsyncLocalStorage } from "node:async_hooks";
import { type Context, type ContextManager, ROOT_CONTEXT, TraceFlags, trace } from "@opentelemetry/api";

/** Whether `ctx` holds a span whose trace is sampled (recorded). */
export function sampled(ctx: Context): boolean {
  const span = trace.getSpan(ctx);
  return span !== undefined && (span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;
}

/**
 * The context manager of a process whose sampler follows its parent (parentbased_*, the default): a
 * sampled context follows its work across every `await` (AsyncLocalStorage), a context not sampled is
 * active only while the function given to `with` runs synchronously.
 *
 * Why: Node 20's AsyncLocalStorage turns on async hooks for the whole process, and with them every
 * promise calls back into JavaScript when it is made and each time it settles. On a read of a contact
 * that was a quarter more CPU in every process (bench/RESULTS-tracing.md), sampled or not. Here the hooks
 * are on only while sampled work is in flight: the storage is enabled by the first sampled `with` and
 * disabled when the last one's work settles. At a ratio of 10 %, nine requests in ten run with no hook.
 *
 * What work not sampled loses is only its ids: past an `await` it has no active context, so what it
 * sends on (a call, an outbox row) carries a traceparent of its own with the sampled flag off
 * (`outgoingTraceparent`), or the one its caller sent (an outbox row's origin), and no span is started
 * for it (every span started without an explicit parent checks `sampled` first). Nothing of such work is
 * recorded anyway.
 */
export class SampledContextManager implements ContextManager {
  readonly #storage = new AsyncLocalStorage<Context>();
  /** Sampled `with`s whose work has not settled: the storage is enabled while there is one. */
  #inFlight = 0;
  /** The context of the `with` not sampled that is running synchronously, if any. */
  #current: Context | undefined;
  readonly #settle = () => {
    if (--this.#inFlight === 0) this.#storage.disable();
  };

  /** How many sampled pieces of work are in flight: the async hooks are on while it is above 0. */
  get sampledInFlight(): number {
    return this.#inFlight;
  }

  active(): Context {
    if (this.#current !== undefined) return this.#current;
    return (this.#inFlight > 0 ? this.#storage.getStore() : undefined) ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    const before = this.#current;
    if (!sampled(ctx)) {
      this.#current = ctx;
      try {
        return fn.apply(thisArg, args);
      } finally {
        this.#current = before;
      }
    }
    this.#current = undefined;
    this.#inFlight++;
    let result: ReturnType<F>;
    try {
      result = this.#storage.run(ctx, () => fn.apply(thisArg, args));
    } catch (err) {
      this.#settle();
      throw err;
    } finally {
      this.#current = before;
    }
    // The work goes on past the call when it answers a promise: the storage stays on until it settles.
    if (result instanceof Promise) result.then(this.#settle, this.#settle);
    else this.#settle();
    return result;
  }

  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== "function") return target;
    const fn = target as unknown as (...args: unknown[]) => unknown;
    const manager = this;
    return function (this: unknown, ...args: unknown[]) {
      return manager.with(ctx, fn, this, ...args);
    } as unknown as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.#storage.disable();
    this.#inFlight = 0;
    this.#current = undefined;
    return this;
  }
}
