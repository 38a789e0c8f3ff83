// `node --import ./bench/noop-telemetry/register.mjs`: the process runs with @funil/telemetry replaced by
// index.mjs here, a build without tracing at all, which bench/tracing.mjs measures "off" against.
import { register } from "node:module";

register("./hooks.mjs", import.meta.url);
