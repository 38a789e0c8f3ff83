import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFunil, type Funil, FunilError } from "@funil/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayUrl, newWorkspace, type Workspace } from "../tests/helpers.js";
import { type ImportProgress, importContacts, parseCsv } from "./import-contacts.js";

let ws: Workspace;
let dir: string;
const tag = `imp${Date.now().toString(36)}`;
const ROWS = 12;

/** A client whose network dies after `postsBeforeCrash` POSTs: that last one reaches the API, its answer is lost. */
function crashingClient(postsBeforeCrash: number): Funil {
  let posts = 0;
  const dying = (async (input: Request | string | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    if (request.method !== "POST") return fetch(request);
    posts++;
    if (posts > postsBeforeCrash) throw new TypeError("fetch failed: network is down");
    const response = await fetch(request);
    if (posts === postsBeforeCrash) throw new TypeError("fetch failed: connection reset");
    return response;
  }) as typeof fetch;
  return createFunil({
    apiKey: ws.key,
    baseUrl: gatewayUrl(),
    fetch: dying,
    retry: { maxRetries: 2, baseDelayMs: 5 },
  });
}

beforeAll(async () => {
  ws = await newWorkspace();
  dir = await mkdtemp(join(tmpdir(), "funil-import-"));
  const lines = ["name,email,phone,tags"];
  for (let i = 0; i < ROWS; i++) lines.push(`"Lead ${i}, Jr.",lead${i}.${tag}@example.com,,"${tag};csv"`);
  await writeFile(join(dir, "contacts.csv"), `${lines.join("\r\n")}\r\n`);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("examples/import-contacts", () => {
  it("parses quoted fields, doubled quotes and CRLF", () => {
    expect(parseCsv('a,b\r\n"x, ""y""",z\n')).toEqual([
      ["a", "b"],
      ['x, "y"', "z"],
    ]);
  });

  it("a crash in the middle (network gone, one answer lost) resumes where it stopped, without duplicates", async () => {
    const csvPath = join(dir, "contacts.csv");
    const seen: ImportProgress[] = [];
    const crashed = await importContacts({
      funil: crashingClient(5),
      csvPath,
      onProgress: (p) => seen.push(p),
    }).catch((e) => e);
    expect(crashed).toBeInstanceOf(FunilError);
    expect(crashed.code).toBe("network_error");
    // Four rows recorded; the fifth was created but its answer was lost.
    expect(seen.map((p) => p.done)).toEqual([1, 2, 3, 4]);
    expect(JSON.parse(await readFile(`${csvPath}.progress.json`, "utf8")).done).toBe(4);

    const funil = createFunil({ apiKey: ws.key, baseUrl: gatewayUrl() });
    const done = await importContacts({ funil, csvPath, onProgress: (p) => seen.push(p) });
    expect(done).toEqual({ done: ROWS, total: ROWS, created: ROWS, updated: 0 });
    expect(seen.at(-1)).toEqual(done);

    const imported = [];
    for await (const c of funil.list("listContacts", { params: { query: { tag } }, pageSize: 5 }))
      imported.push(c);
    expect(imported).toHaveLength(ROWS);
    expect(new Set(imported.map((c) => c.email)).size).toBe(ROWS);
    expect(imported[0]!.name).toBe("Lead 0, Jr.");

    // Once done, a run again does nothing.
    expect(await importContacts({ funil, csvPath })).toEqual(done);
  });
});
