/**
 * Imports contacts from a CSV file (header `name,email,phone,tags`, tags separated by `;`), with
 * progress, resumable after a crash without duplicates:
 * - each row is sent with an Idempotency-Key made of the file's hash and the row's number, so a row
 *   sent again (its answer lost in the crash) is answered from the first request, never done twice;
 * - the number of rows done is saved beside the file after each row, so a second run starts where the
 *   first stopped.
 */
import { createHash } from "node:crypto";
import { readFile, rename, writeFile } from "node:fs/promises";
import type { Funil } from "@funil/client";

export interface ImportProgress {
  done: number;
  total: number;
  created: number;
  updated: number;
}

export interface ImportOptions {
  funil: Funil;
  csvPath: string;
  /** Where progress is kept between runs; default `<csvPath>.progress.json`. */
  statePath?: string;
  onProgress?: (progress: ImportProgress) => void;
}

/** RFC 4180 fields: commas, quotes doubled inside quoted fields, CRLF or LF. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') field += text[i++];
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(field);
      if (row.some((f) => f !== "")) rows.push(row);
      row = [];
      field = "";
    } else field += c;
  }
  row.push(field);
  if (row.some((f) => f !== "")) rows.push(row);
  return rows;
}

async function saveState(path: string, state: ImportProgress & { source: string }) {
  // Written aside and renamed: a crash never leaves half a file.
  await writeFile(`${path}.tmp`, JSON.stringify(state));
  await rename(`${path}.tmp`, path);
}

export async function importContacts(opts: ImportOptions): Promise<ImportProgress> {
  const text = await readFile(opts.csvPath, "utf8");
  const source = createHash("sha256").update(text).digest("hex").slice(0, 16);
  const [header = [], ...rows] = parseCsv(text);
  const column = (name: string) => header.findIndex((h) => h.trim().toLowerCase() === name);
  const at = { name: column("name"), email: column("email"), phone: column("phone"), tags: column("tags") };
  const statePath = opts.statePath ?? `${opts.csvPath}.progress.json`;
  const saved = JSON.parse(await readFile(statePath, "utf8").catch(() => "null"));
  // Another file under the same name starts over.
  const progress: ImportProgress =
    saved?.source === source
      ? { done: saved.done, total: rows.length, created: saved.created, updated: saved.updated }
      : { done: 0, total: rows.length, created: 0, updated: 0 };
  for (let i = progress.done; i < rows.length; i++) {
    const row = rows[i]!;
    const value = (index: number) => (index >= 0 && row[index]?.trim() ? row[index]!.trim() : undefined);
    const tags = value(at.tags)
      ?.split(";")
      .map((t) => t.trim())
      .filter(Boolean);
    let status = 0;
    await opts.funil.upsertContact({
      body: { name: value(at.name), email: value(at.email), phone: value(at.phone), tags },
      idempotencyKey: `import-${source}-${i}`,
      onResponse: (response) => {
        status = response.status;
      },
    });
    if (status === 201) progress.created++;
    else progress.updated++;
    progress.done = i + 1;
    await saveState(statePath, { ...progress, source });
    opts.onProgress?.({ ...progress });
  }
  return progress;
}
