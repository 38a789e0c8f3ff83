import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain ESM script without types, run by `npm run lint`
import { functionsOf } from "../../scripts/function-lengths.mjs";

interface Found {
  name: string;
  line: number;
  total: number;
  own: number;
}

const script = path.resolve(import.meta.dirname, "../../scripts/function-lengths.mjs");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "function-lengths-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** `n` statement lines. */
const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join("\n");
const of = (text: string): Found[] => functionsOf("fixture.ts", text);
const named = (text: string, name: string) => of(text).find((f) => f.name === name);

function lint(files: Record<string, string>) {
  const where = fs.mkdtempSync(path.join(dir, "case-"));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(where, name), text);
  return spawnSync(process.execPath, [script, where], { encoding: "utf8" });
}

describe("docs/architecture.md §Function length", () => {
  it("§Function length: a function's lines run from its declaration to its end, blank lines included, its JSDoc not", () => {
    const text = `/** Why. */\nexport function f() {\n${body(10)}\n\n}\n`;
    expect(named(text, "f")).toMatchObject({ line: 2, total: 13, own: 13 });
  });

  it("§Function length: a nested function's inner lines are its own, not the outer function's", () => {
    const text = `function outer() {\n  const inner = () => {\n${body(50)}\n  };\n  return inner;\n}\n`;
    expect(named(text, "outer")).toMatchObject({ total: 55, own: 5 });
    expect(named(text, "inner")).toMatchObject({ total: 52, own: 52 });
  });

  it("§Function length: methods, arrows a function returns and callbacks are functions too, named", () => {
    const text = [
      "class C {\n  m() {\n    return 1;\n  }\n}",
      "export const routes = (ctx: unknown) => async (app: unknown) => {\n  return [ctx, app];\n};",
      "register(async (app) => {\n  return app;\n});",
    ].join("\n");
    expect(of(text).map((f) => f.name)).toEqual([
      "m",
      "routes",
      "routes → (returned)",
      "(callback of register)",
    ]);
  });

  it("§Function length: describe/it/test callbacks are not functions and count for none around them", () => {
    const text = [
      'describe("d", () => {',
      '  it.each([1])("i", () => {',
      body(100),
      "  });",
      '  test("t", async () => {',
      "    const helper = () => 1;",
      "    return helper;",
      "  });",
      "});",
    ].join("\n");
    expect(of(text).map((f) => f.name)).toEqual(["helper"]);
  });

  it("§Function length: the lint fails naming each function over 80 lines of its own, and passes at 80", () => {
    const long = `export function tooLong() {\n${body(79)}\n}\n`;
    const fine = `export function fits() {\n${body(78)}\n}\n`;
    const failed = lint({ "long.ts": long, "fine.mjs": fine });
    expect(failed.status).toBe(1);
    expect(failed.stdout).toMatch(/long\.ts:1 tooLong: 81 own lines \(81 in all\)/);
    expect(failed.stdout).not.toMatch(/fits/);
    expect(failed.stderr).toMatch(/1 function\(s\) over 80 lines/);

    const passed = lint({ "fine.ts": fine });
    expect(passed.status).toBe(0);
    expect(passed.stdout).toMatch(/none over 80 own lines/);
  });

  it("§Function length: generated code and builds are not read", () => {
    const long = `export function generated() {\n${body(200)}\n}\n`;
    const where = fs.mkdtempSync(path.join(dir, "case-"));
    for (const sub of ["gen", "dist", "node_modules"]) {
      fs.mkdirSync(path.join(where, sub));
      fs.writeFileSync(path.join(where, sub, "x.ts"), long);
    }
    const run = spawnSync(process.execPath, [script, where], { encoding: "utf8" });
    expect(run.status).toBe(0);
  });
});
