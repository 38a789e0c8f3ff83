// The public API's request rules, declared once (docs/architecture.md §Style: each field rule has one owner): the gateway
// validates HTTP requests and writes the OpenAPI document from them, the service that owns the data
// applies the same schemas to its gRPC requests. The messages other systems publish to the services on
// NATS (ingest.ts, platform.ts) are here too, the source of the AsyncAPI document.
export { z } from "zod";
export * from "./audit.js";
export * from "./common.js";
export * from "./contacts.js";
export * from "./deals.js";
export * from "./events.js";
export * from "./funnel.js";
export * from "./ingest.js";
export * from "./interactions.js";
export * from "./learners.js";
export * from "./notes.js";
export * from "./pipelines.js";
export * from "./platform.js";
export * from "./scheduling.js";
export * from "./tasks.js";
export * from "./time.js";
export * from "./webhooks.js";
export * from "./workspace.js";
