// Lint: no hand-written function longer than a screen (docs/architecture.md §Style, "~80 lines of its
// own"). Parses every hand-written TypeScript and JavaScript file with the TypeScript compiler and lists
// each function, method, accessor, constructor or arrow whose own lines exceed the limit; exits 1 if any.
//
// What counts (docs/architecture.md §Function length):
// - a function's lines run from the line its declaration starts on (the JSDoc above it excluded) to the
//   line it ends on, blank and comment lines included: what the reader has to scroll through;
// - its own lines are those minus the inner lines of the functions written inside it (all but a nested
//   function's first and last line, which hold the parent's own code: `items.map((x) => {` and `});`);
// - vitest's describe/it/test callbacks are a test's outline, not functions: they are not listed, and their
//   lines are not counted in a function around them; the functions written inside them are checked.
//
// `node scripts/function-lengths.mjs [--max N] [--all] [file or folder …]`: --all lists every function over
// the limit with its total too, even when its own lines pass (to see what nests deep).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const MAX_LINES = 80;

/** Where hand-written code lives; generated code (buf's, the OpenAPI client's) and builds do not count. */
const ROOTS = ["packages", "services", "scripts", "bench", "tests", "examples"];
const SKIP_DIRS = new Set(["node_modules", "dist", "gen", "coverage", ".turbo", ".data"]);
const SOURCE = /\.(ts|mts|cts|mjs|cjs|js)$/;
/** Inside packages/ and services/, only each package's src/ is source; the rest is build and config. */
const inSourceTree = (rel) => {
  const [top, , sub] = rel.split(path.sep);
  return (top !== "packages" && top !== "services") || sub === undefined || sub === "src";
};

function walk(dir, out) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".") || SKIP_DIRS.has(entry.name)) continue;
    const full = path.join(dir, entry.name);
    if (!inSourceTree(path.relative(root, full))) continue;
    if (entry.isDirectory()) walk(full, out);
    else if (SOURCE.test(entry.name) && !entry.name.endsWith(".d.ts")) out.push(full);
  }
  return out;
}

/** Every hand-written source file below the given paths (default: the repository's source roots). */
export function sourceFiles(paths = ROOTS.map((r) => path.join(root, r))) {
  return paths.flatMap((p) => {
    if (!fs.existsSync(p)) return [];
    return fs.statSync(p).isDirectory() ? walk(p, []) : [p];
  });
}

const TEST_OUTLINE = new Set(["describe", "it", "test", "suite"]);

/** `describe(…)`, `it.each(…)(…)`, `test.skipIf(…)(…)`, `describe.sequential(…)`: the name the chain starts from. */
function calleeRoot(expr) {
  let e = expr;
  while (ts.isCallExpression(e) || ts.isPropertyAccessExpression(e)) e = e.expression;
  return ts.isIdentifier(e) ? e.text : undefined;
}

const isTestOutline = (node) =>
  node.parent !== undefined &&
  ts.isCallExpression(node.parent) &&
  node.parent.arguments.includes(node) &&
  TEST_OUTLINE.has(calleeRoot(node.parent.expression) ?? "");

function nameOf(node) {
  if (node.name && !ts.isComputedPropertyName(node.name)) return node.name.getText();
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const p = node.parent;
  if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p))
    return p.name.getText();
  if (ts.isCallExpression(p)) return `(callback of ${p.expression.getText().slice(0, 40)})`;
  if (ts.isExportAssignment(p)) return "default";
  // `const routes = (ctx) => async (app) => {…}`: the function a function returns.
  if (isFunction(p)) return `${nameOf(p)} → (returned)`;
  return "(anonymous)";
}

const isFunction = (node) => ts.isFunctionLike(node) && "body" in node && node.body !== undefined;

/** Each function of one file: its name, first line, total lines and own lines. */
export function functionsOf(file, text = fs.readFileSync(file, "utf8")) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lineOf = (pos) => source.getLineAndCharacterOfPosition(pos).line + 1;
  const found = [];
  /** Returns the lines inside `node`'s nested functions, for the function around it to take off. */
  function visit(node) {
    if (!isFunction(node)) {
      let nested = 0;
      ts.forEachChild(node, (child) => {
        nested += visit(child);
      });
      return nested;
    }
    const first = lineOf(node.getStart(source));
    const last = lineOf(node.getEnd());
    const total = last - first + 1;
    const entry = { file, name: nameOf(node), line: first, total, own: total };
    if (!isTestOutline(node)) found.push(entry);
    ts.forEachChild(node, (child) => {
      entry.own -= visit(child);
    });
    return Math.max(0, total - 2);
  }
  visit(source);
  return found;
}

/** The functions over `max` lines of their own in `files`, longest first. */
export function longFunctions(files, max = MAX_LINES) {
  return files
    .flatMap((f) => functionsOf(f))
    .filter((f) => f.own > max)
    .sort((a, b) => b.own - a.own);
}

function main(argv) {
  let max = MAX_LINES;
  let all = false;
  const paths = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--max") max = Number(argv[++i]);
    else if (argv[i] === "--all") all = true;
    else paths.push(path.resolve(argv[i]));
  }
  if (!Number.isInteger(max) || max < 1) {
    console.error("--max takes a whole number of lines");
    return 2;
  }
  const files = sourceFiles(paths.length > 0 ? paths : undefined);
  const functions = files.flatMap((f) => functionsOf(f));
  const over = functions.filter((f) => f.own > max || (all && f.total > max));
  over.sort((a, b) => b.own - a.own || b.total - a.total);
  for (const f of over)
    console.log(`${path.relative(root, f.file)}:${f.line} ${f.name}: ${f.own} own lines (${f.total} in all)`);
  const failing = over.filter((f) => f.own > max).length;
  if (failing > 0) {
    console.error(
      `${failing} function(s) over ${max} lines of their own: split each into functions that do one thing`,
    );
    return 1;
  }
  console.log(
    `function lengths: ${functions.length} functions in ${files.length} files, none over ${max} own lines`,
  );
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  process.exitCode = main(process.argv.slice(2));
