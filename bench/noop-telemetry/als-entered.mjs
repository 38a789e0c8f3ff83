// `node --import ./bench/noop-telemetry/als-entered.mjs`: an AsyncLocalStorage entered once at start, with
// nothing else of tracing, so that bench:tracing (BENCH_ALS_PROBE=1) measures what Node 20's async hooks
// alone cost a process once any AsyncLocalStorage is in use (the OpenTelemetry context manager is one).
import { AsyncLocalStorage } from "node:async_hooks";

new AsyncLocalStorage().enterWith({ entered: true });
