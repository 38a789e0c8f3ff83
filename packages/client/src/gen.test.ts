import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
// @ts-expect-error: plain ESM script without types
import { clientTypes, TYPES_FILE } from "../../../scripts/client-types.mjs";

describe("@funil/client's types", () => {
  it("are those of the gateway's current OpenAPI document (else: npm run generate:client)", async () => {
    expect(await readFile(TYPES_FILE, "utf8")).toBe(await clientTypes());
  });
});
