// The module hook register.mjs installs: @funil/telemetry resolves to the no-op stand-in.
const NOOP = new URL("./index.mjs", import.meta.url).href;

export async function resolve(specifier, context, next) {
  if (specifier === "@funil/telemetry") return { url: NOOP, shortCircuit: true };
  return next(specifier, context);
}
