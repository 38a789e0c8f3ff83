/**
 * The reference part of /docs: every operation of the OpenAPI document with
 * its parameters, its answers, and a curl and a TypeScript sample, the
 * samples' values made from the schemas.
 */

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is walked as plain JSON
type Json = any;

export const escapeHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

export interface Operation {
  id: string;
  method: string;
  path: string;
  op: Json;
}

export function operationsOf(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {}))
    for (const [method, op] of Object.entries<Json>(item))
      if (op && typeof op === "object" && op.operationId) out.push({ id: op.operationId, method, path, op });
  return out;
}

const resolve = (doc: Json, schema: Json): Json =>
  schema?.$ref ? resolve(doc, doc.components.schemas[schema.$ref.split("/").pop()]) : schema;

function stringExample(name: string, schema: Json): string {
  if (schema.format === "date-time") return "2026-03-02T14:00:00.000Z";
  if (schema.format === "email" || /email/i.test(name)) return "ana@example.com";
  if (schema.format === "uri" || /url/i.test(name)) return "https://example.com/funil";
  if (/phone/i.test(name)) return "+55 11 91234-5678";
  if (/Id$/.test(name) || name === "id") return `${name.replace(/Id$/, "") || "id"}_…`;
  return name ? name.replace(/([A-Z])/g, " $1").toLowerCase() : "text";
}

/** A value the schema accepts, for the samples: required fields only, or the first few when none is. */
export function exampleOf(doc: Json, raw: Json, name = "", depth = 0): unknown {
  const schema = resolve(doc, raw);
  if (!schema || depth > 4) return null;
  if (schema.example !== undefined) return schema.example;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  const choice = schema.anyOf ?? schema.oneOf;
  if (choice) return exampleOf(doc, choice.find((s: Json) => s.type !== "null") ?? choice[0], name, depth);
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== "null") : schema.type;
  if (type === "object" || schema.properties) {
    const props = Object.keys(schema.properties ?? {});
    const chosen = schema.required?.length ? schema.required : props.slice(0, 3);
    return Object.fromEntries(
      chosen.map((p: string) => [p, exampleOf(doc, schema.properties?.[p], p, depth + 1)]),
    );
  }
  if (type === "array") return [exampleOf(doc, schema.items, name.replace(/s$/, ""), depth + 1)];
  if (type === "integer" || type === "number") return schema.minimum ?? 1;
  if (type === "boolean") return true;
  return stringExample(name, schema);
}

function bodyOf(doc: Json, op: Json): unknown {
  const schema = op.requestBody?.content?.["application/json"]?.schema;
  return schema ? exampleOf(doc, schema) : undefined;
}

const params = (op: Json, where: string) => (op.parameters ?? []).filter((p: Json) => p.in === where);

/** The curl sample: the key from $FUNIL_KEY (the admin token for /admin), a fresh Idempotency-Key where one is taken. */
export function curlSample(doc: Json, o: Operation): string {
  const admin = o.path.startsWith("/admin/");
  const path = o.path.replace(/\{(\w+)\}/g, (_, p) => `${p.toUpperCase()}`);
  const query = params(o.op, "query").filter((p: Json) => p.required);
  const url = `$FUNIL_URL${path}${query.length ? `?${query.map((p: Json) => `${p.name}=…`).join("&")}` : ""}`;
  const lines = [`curl -X ${o.method.toUpperCase()} "${url}"`];
  lines.push(`  -H "Authorization: Bearer ${admin ? "$ADMIN_TOKEN" : "$FUNIL_KEY"}"`);
  if (params(o.op, "header").some((p: Json) => p.name === "idempotency-key"))
    lines.push(`  -H "Idempotency-Key: $(uuidgen)"`);
  const body = bodyOf(doc, o.op);
  if (body !== undefined) {
    lines.push(`  -H 'content-type: application/json'`);
    lines.push(`  -d '${JSON.stringify(body)}'`);
  }
  return lines.join(" \\\n");
}

/** The TypeScript sample: the client's method for /api/v1, plain fetch for the admin API (not in the client). */
export function typescriptSample(doc: Json, o: Operation): string {
  const body = bodyOf(doc, o.op);
  const path = Object.fromEntries(params(o.op, "path").map((p: Json) => [p.name, `${p.name}_…`]));
  const query = Object.fromEntries(
    params(o.op, "query")
      .filter((p: Json) => p.required)
      .map((p: Json) => [p.name, exampleOf(doc, p.schema, p.name)]),
  );
  if (o.path.startsWith("/admin/")) {
    const url = o.path.replace(/\{(\w+)\}/g, (_, p) => `\${${p}}`);
    const init = [
      `method: "${o.method.toUpperCase()}"`,
      // The sample's own template literal, written out.
      `headers: { authorization: "Bearer " + adminToken, "content-type": "application/json" }`,
    ];
    if (body !== undefined) init.push(`body: JSON.stringify(${JSON.stringify(body)})`);
    const given = Object.keys(path)
      .map((p) => `const ${p} = "${p}_…";\n`)
      .join("");
    return `// The admin API is not in @funil/client.\n${given}const res = await fetch(\`\${funilUrl}${url}\`, {\n  ${init.join(",\n  ")},\n});`;
  }
  const init: Record<string, unknown> = {};
  const p: Record<string, unknown> = {};
  if (Object.keys(path).length) p.path = path;
  if (Object.keys(query).length) p.query = query;
  if (Object.keys(p).length) init.params = p;
  if (body !== undefined) init.body = body;
  const arg = Object.keys(init).length ? JSON.stringify(init, null, 2).replace(/"(\w+)":/g, "$1:") : "";
  const call = `const res = await funil.${o.id}(${arg});`;
  const isList = params(o.op, "query").some((q: Json) => q.name === "cursor");
  if (!isList) return call;
  const listInit = Object.keys(p).length
    ? `{ params: ${JSON.stringify(p).replace(/"(\w+)":/g, "$1:")}, pageSize: 100 }`
    : "{ pageSize: 100 }";
  return `${call}\n\n// Every page, the cursor followed:\nfor await (const item of funil.list("${o.id}", ${listInit})) console.log(item);`;
}
