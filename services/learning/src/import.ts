#!/usr/bin/env node
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { baseEnv, loadConfig, naming, runMain } from "@funil/config";
import { migrate, openDatabase } from "@funil/db";
import { ImportError, importFile, type Progress } from "./importer.js";

const USAGE = `usage: npm run import:platform -- FILE.ndjson [--skip-bad] [--rejects FILE]
  one {"subject": "platform.…", "data": {…}} per line (docs/api/learners.md §Ingest)
  --skip-bad   write bad lines to the rejects file (default FILE.rejects.ndjson) instead of stopping
environment: DATABASE_URL, FUNIL_ENV (the learning service's database)`;

const migrations = fileURLToPath(new URL("../migrations", import.meta.url));
const number = (n: number) => n.toLocaleString("en-US");

/** A progress bar on stderr: a redrawn line on a terminal, a line every few seconds otherwise. */
function progressBar(started: number) {
  let last = 0;
  return (p: Progress) => {
    const now = Date.now();
    const tty = process.stderr.isTTY;
    if (now - last < (tty ? 200 : 5000) && p.phase === "reading") return;
    last = now;
    const share = p.totalBytes > 0 ? Math.min(1, p.bytes / p.totalBytes) : 1;
    const bar = "█".repeat(Math.round(share * 30)).padEnd(30, "░");
    const rate = Math.round(p.lines / Math.max(0.001, (now - started) / 1000));
    const text =
      p.phase === "reading"
        ? `${bar} ${String(Math.round(share * 100)).padStart(3)}% ${number(p.lines)} lines, ${number(rate)} lines/s`
        : `${bar} 100% ${number(p.lines)} lines read, ${number(rate)} lines/s; ${p.phase}…`;
    process.stderr.write(tty ? `\r${text}` : `${text}\n`);
    if (tty && p.phase !== "reading") process.stderr.write("\n");
  };
}

runMain(async () => {
  const args = process.argv.slice(2);
  const skipBad = args.includes("--skip-bad");
  const rejectsAt = args.indexOf("--rejects");
  const rejectsFile = rejectsAt >= 0 ? args[rejectsAt + 1] : undefined;
  const files = args.filter((a, i) => !a.startsWith("--") && (rejectsAt < 0 || i !== rejectsAt + 1));
  if (files.length !== 1 || (rejectsAt >= 0 && !rejectsFile)) {
    process.stderr.write(`${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  if (!existsSync(files[0]!)) {
    process.stderr.write(`cannot read ${files[0]}: no such file\n`);
    process.exitCode = 2;
    return;
  }
  const config = loadConfig(baseEnv);
  const sql = await openDatabase(config.DATABASE_URL, naming(config.FUNIL_ENV).database("learning"), {
    max: 2,
  });
  const started = Date.now();
  try {
    await migrate(sql, migrations);
    const result = await importFile(sql, files[0]!, {
      skipBad,
      ...(rejectsFile ? { rejectsFile } : {}),
      onProgress: progressBar(started),
    });
    const seconds = (Date.now() - started) / 1000;
    process.stderr.write(
      `imported ${number(result.imported)} of ${number(result.lines)} lines in ${seconds.toFixed(1)} s ` +
        `(${number(Math.round(result.lines / seconds))} lines/s; read ${(result.readMs / 1000).toFixed(1)} s, ` +
        `merge ${(result.mergeMs / 1000).toFixed(1)} s)` +
        (result.rejected ? `; ${number(result.rejected)} rejected, written to ${result.rejectsFile}` : "") +
        "\n",
    );
  } catch (err) {
    if (!(err instanceof ImportError)) throw err;
    process.stderr.write(
      `\nimport failed: ${err.message}\nnothing was imported (--skip-bad skips bad lines)\n`,
    );
    process.exitCode = 1;
  } finally {
    await sql.end({ timeout: 5 });
  }
});
