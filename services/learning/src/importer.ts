import { once } from "node:events";
import { createReadStream, createWriteStream, type WriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createInterface } from "node:readline";
import type { Sql } from "@funil/db";
import { lineError, parseLine, rowsOf } from "./bulk.js";
import { describeProblems } from "./messages.js";
import { openStaging } from "./store/bulk.js";

/** A bad record without --skip-bad: nothing was imported. */
export class ImportError extends Error {}

export interface Progress {
  lines: number;
  bytes: number;
  totalBytes: number;
  phase: "reading" | "loading" | "merging";
}

export interface ImportResult {
  lines: number;
  imported: number;
  rejected: number;
  rejectsFile?: string;
  /** Reading, checking and COPYing into the staging tables. */
  readMs: number;
  mergeMs: number;
}

/**
 * `npm run import:platform` (docs/api/learners.md §Ingest): streams an NDJSON file of
 * `{subject, data}` lines, checks each like a message of the live stream,
 * spools the rows to disk, COPYs them into staging tables and merges them in
 * one transaction. The
 * file is read line by line with backpressure, so memory stays flat on any
 * size. A bad line stops the import before anything is merged (the error
 * names the line and the field), unless `skipBad`: then it goes to the
 * rejects file with its reason and is counted.
 */
export async function importFile(
  sql: Sql,
  file: string,
  opts: { skipBad?: boolean; rejectsFile?: string; onProgress?: (p: Progress) => void } = {},
): Promise<ImportResult> {
  const totalBytes = (await stat(file)).size;
  const started = Date.now();
  // Staging first: the file starts flowing as soon as it is opened, and no line may pass unread.
  const staging = await openStaging(sql);
  const input = createReadStream(file);
  let bytes = 0;
  input.on("data", (chunk) => {
    bytes += chunk.length;
  });
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  const rejectsFile = opts.rejectsFile ?? `${file}.rejects.ndjson`;
  let rejects: WriteStream | undefined;
  let line = 0;
  let imported = 0;
  let rejected = 0;
  const report = (phase: Progress["phase"]) => opts.onProgress?.({ lines: line, bytes, totalBytes, phase });
  try {
    for await (const text of lines) {
      line++;
      if (line % 5000 === 0) report("reading");
      if (text.trim() === "") continue;
      const checked = parseLine(text);
      if (!checked.ok) {
        if (!opts.skipBad) throw new ImportError(lineError(line, checked.problems));
        rejected++;
        rejects ??= createWriteStream(rejectsFile);
        const entry = { line, reason: describeProblems(checked.problems), raw: text };
        if (!rejects.write(`${JSON.stringify(entry)}\n`)) await once(rejects, "drain");
        continue;
      }
      for (const [table, values] of rowsOf(checked.message)) await staging.add(table, line, values);
      imported++;
    }
    report("loading");
    await staging.load();
    report("merging");
    const merging = Date.now();
    await staging.merge();
    return {
      lines: line,
      imported,
      rejected,
      ...(rejects ? { rejectsFile } : {}),
      readMs: merging - started,
      mergeMs: Date.now() - merging,
    };
  } catch (err) {
    await staging.abort();
    throw err;
  } finally {
    lines.close();
    input.destroy();
    if (rejects) {
      rejects.end();
      await once(rejects, "close");
    }
    await staging.drop();
  }
}
