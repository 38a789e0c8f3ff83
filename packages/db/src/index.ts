export * from "./client.js";
export * from "./idempotency.js";
export * from "./ids.js";
export * from "./migrate.js";
export * from "./outbox.js";
export * from "./pages.js";
export * from "./reads.js";
export * from "./transactions.js";
