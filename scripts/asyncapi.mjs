// Writes the AsyncAPI 3.0 document of the NATS subjects (docs/api/events.md §AsyncAPI document) from the
// built gateway, no servers needed, to docs/asyncapi.json: the same document the gateway serves at
// /api/v1/asyncapi.json. `--check` writes nothing and fails when the committed file differs.
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { asyncapiDocument } from "../services/gateway/dist/asyncapi.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const ASYNCAPI_FILE = path.join(root, "docs/asyncapi.json");

export const asyncapiText = () => `${JSON.stringify(asyncapiDocument(), null, 2)}\n`;

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const text = asyncapiText();
  const file = path.relative(root, ASYNCAPI_FILE);
  if (process.argv.includes("--check")) {
    const committed = await readFile(ASYNCAPI_FILE, "utf8").catch(() => "");
    if (committed !== text) {
      console.error(`${file} is stale: run npm run generate:asyncapi and commit`);
      process.exit(1);
    }
    console.log(`${file} is up to date`);
  } else {
    await writeFile(ASYNCAPI_FILE, text);
    console.log(`asyncapi: wrote ${file}`);
  }
}
