import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import postgres from "postgres";
import { inject } from "vitest";
import { gatewayUrl } from "../helpers.js";
import type { Json, Pools } from "./schema-arbitrary.js";

/** How many generated requests each property sends: FUZZ_RUNS=2000 for a long run. */
export const RUNS = Number(process.env.FUZZ_RUNS ?? 12);

export interface Operation {
  method: string;
  path: string;
  op: Json;
  parameters: Json[];
  body?: Json;
  admin: boolean;
}

export async function loadDocument(): Promise<Json> {
  const res = await fetch(`${gatewayUrl()}/api/v1/openapi.json`);
  if (res.status !== 200) throw new Error(`openapi.json: ${res.status}`);
  return res.json();
}

/** Every operation of the document: a route that lands later is walked like the others. */
export function operations(doc: Json): Operation[] {
  return Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
    Object.entries<Json>(item)
      .filter(([, op]) => op && typeof op === "object" && "responses" in op)
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        path,
        op,
        parameters: op.parameters ?? [],
        body: op.requestBody?.content?.["application/json"]?.schema,
        admin: path.startsWith("/admin/"),
      })),
  );
}

/** The list a path parameter names: `/contacts/{id}` → contacts, `/workspaces/{ws}/keys` → workspaces. */
export function poolOfParam(path: string, param: string, pools: Pools): string[] {
  const parts = path.split("/");
  const i = parts.indexOf(`{${param}}`);
  return pools[parts[i - 1] ?? ""] ?? [];
}

export interface Sent {
  method: string;
  path: string;
  query?: Array<[string, string]>;
  headers?: Record<string, string>;
  body?: string;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json?: Json;
}

export async function send(req: Sent, auth: string): Promise<Answer> {
  const qs = req.query?.length ? `?${new URLSearchParams(req.query).toString()}` : "";
  const res = await fetch(`${gatewayUrl()}${req.path}${qs}`, {
    method: req.method,
    headers: { authorization: `Bearer ${auth}`, ...req.headers },
    // fetch cannot send a body with GET or HEAD.
    body: req.method === "GET" || req.method === "HEAD" ? undefined : req.body,
  });
  const text = await res.text();
  let json: Json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {}
  return { status: res.status, headers: res.headers, text, json };
}

/** Ajv over the document's own schemas (OpenAPI 3.1 is JSON Schema 2020-12). */
export function responseChecker(doc: Json) {
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  addFormats.default(ajv);
  const rewritten = JSON.parse(JSON.stringify(doc).replaceAll('"$ref":"#/', '"$ref":"openapi.json#/'));
  ajv.addSchema({ $id: "openapi.json", components: rewritten.components });
  const cache = new Map<string, ReturnType<typeof ajv.compile>>();

  /** What is wrong with an answer, for the operation it answered: empty when it is as documented. */
  return (operation: Operation, answer: Answer): string[] => {
    const problems: string[] = [];
    const status = String(answer.status);
    if (answer.status >= 500) problems.push(`a ${status}: ${answer.text.slice(0, 300)}`);
    if (!answer.headers.get("x-request-id")) problems.push("no x-request-id");
    const documented = operation.op.responses[status];
    if (!documented) {
      problems.push(
        `status ${status} is not documented (${Object.keys(operation.op.responses)}): ${answer.text.slice(0, 300)}`,
      );
      return problems;
    }
    const schema = documented.content?.["application/json"]?.schema;
    if (!schema) {
      if (answer.text !== "") problems.push(`a body where none is documented: ${answer.text.slice(0, 200)}`);
      return problems;
    }
    const key = `${operation.method} ${operation.path} ${status}`;
    let validate = cache.get(key);
    if (!validate) {
      const refd = JSON.parse(JSON.stringify(schema).replaceAll('"$ref":"#/', '"$ref":"openapi.json#/'));
      validate = ajv.compile(refd);
      cache.set(key, validate);
    }
    if (answer.json === undefined || !validate(answer.json))
      problems.push(
        `body does not match the ${status} schema: ${ajv.errorsText(validate.errors)}: ${answer.text.slice(0, 300)}`,
      );
    return problems;
  };
}

/**
 * A digest of every row any service keeps for a workspace (every table with a workspace_id column, in
 * every database of the test stack, and the workspace row itself), to prove that an answer wrote
 * nothing. Idempotency records are left out: remembering a 4xx answer is their job.
 */
export async function fingerprinter() {
  const env = inject("funilEnv");
  const url = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const server = postgres(url, { max: 1, onnotice: () => {} });
  // The timeline's database, and the webhooks service's event log, are written only by consumers, from
  // events of earlier requests that land at any moment: no request writes there, so they say nothing
  // about what a 4xx did.
  const names = await server`
    select datname from pg_database
    where datname like ${`funil\\_${env}\\_%`} and datname <> ${`funil_${env}_timeline`}`;
  await server.end();
  const databases = await Promise.all(
    names.map(async ({ datname }) => {
      const sql = postgres(url.replace(/\/[^/]*$/, `/${datname}`), { max: 1, onnotice: () => {} });
      const tables = await sql<{ table_name: string; column_name: string }[]>`
        select table_name, column_name from information_schema.columns
        where table_schema = 'public' and (column_name = 'workspace_id' or (table_name = 'workspaces' and column_name = 'id'))
          and table_name !~ '(idempot|outbox|inbox|migrations|event_log)'`;
      return { sql, tables };
    }),
  );
  return {
    async of(workspaceId: string): Promise<string> {
      const parts = await Promise.all(
        databases.flatMap(({ sql, tables }) =>
          tables.map(
            ({ table_name, column_name }) =>
              sql`select ${table_name} as t, md5(coalesce(string_agg(r::text, ',' order by r::text), '')) as h
                  from ${sql(table_name)} r where ${sql(column_name)} = ${workspaceId}`,
          ),
        ),
      );
      return parts.map((rows) => `${rows[0]?.t}:${rows[0]?.h}`).join(" ");
    },
    async close() {
      await Promise.all(databases.map(({ sql }) => sql.end()));
    },
  };
}
