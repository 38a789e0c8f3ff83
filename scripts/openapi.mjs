// Writes the gateway's OpenAPI document (from the built gateway, no servers needed) to the file named
// by the first argument: `npm run lint:openapi` lints it with Redocly's recommended rules.
import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { systemClock } from "@funil/config";
import { buildApp } from "../services/gateway/dist/app.js";
import { gatewayConfig } from "../services/gateway/dist/config.js";

const out = process.argv[2] ?? ".data/openapi.json";
// The routes only reach their stores and services when called; the document needs none of them.
const config = gatewayConfig.parse({ LOG_LEVEL: "silent", ADMIN_TOKEN: "document-only-admin-token" });
const app = await buildApp({ config, clock: systemClock, redis: { defineCommand() {} }, keys: {}, crm: {} });
await app.ready();
// A fresh clone has no .data/ yet.
await mkdir(dirname(out), { recursive: true });
await writeFile(out, `${JSON.stringify(app.swagger(), null, 2)}\n`);
await app.close();
console.log(`openapi: wrote ${out}`);
