import { rm, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
// @ts-expect-error: plain ESM script without types
import { openapiDocument } from "../../../scripts/client-types.mjs";
import { operationsOf, typescriptSample } from "../../../services/gateway/src/docs/reference.js";

/** Every TypeScript sample of /docs compiles against @funil/client's types: a reader can paste it. */
describe("/docs TypeScript samples", () => {
  it("type-check against the client, one function per operation", async () => {
    const doc = await openapiDocument();
    const file = fileURLToPath(new URL("../.samples-check.ts", import.meta.url));
    const parts = [
      'import type { Funil } from "@funil/client";',
      "declare const funil: Funil;",
      "declare const funilUrl: string;",
      "declare const adminToken: string;",
      ...operationsOf(doc).map(
        (o) => `export async function ${o.id}() {\n${typescriptSample(doc, o)}\nreturn res;\n}`,
      ),
    ];
    await writeFile(file, parts.join("\n\n"));
    try {
      const program = ts.createProgram([file], {
        strict: true,
        noEmit: true,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        target: ts.ScriptTarget.ES2022,
        lib: ["lib.es2023.d.ts", "lib.dom.d.ts"],
        types: [],
        skipLibCheck: true,
      });
      const problems = ts
        .getPreEmitDiagnostics(program)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      expect(problems).toEqual([]);
      expect(operationsOf(doc).length).toBeGreaterThan(40);
    } finally {
      await rm(file, { force: true });
    }
  });
});
