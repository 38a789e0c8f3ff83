import { GUIDES } from "./guides.js";
import { curlSample, escapeHtml, type Operation, operationsOf, typescriptSample } from "./reference.js";

/**
 * /docs: one HTML page that teaches, guides first, then every operation of
 * the OpenAPI document with curl and TypeScript samples. Everything is
 * inline (no script, no font, no stylesheet fetched), so it reads offline;
 * the Content-Security-Policy it is served with forbids any other asset.
 */

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is walked as plain JSON
type Json = any;

export const DOCS_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

const STYLE = `
body{font:15px/1.55 system-ui,sans-serif;margin:0;color:#1d2330;display:flex}
nav{width:260px;height:100vh;overflow:auto;position:sticky;top:0;background:#f4f5f8;padding:16px;box-sizing:border-box;font-size:13px}
nav a{display:block;color:#334;text-decoration:none;padding:1px 0}nav h2{font-size:12px;text-transform:uppercase;color:#778}
main{max-width:920px;padding:24px 40px;box-sizing:border-box}
pre{background:#0f1420;color:#e6e9ef;padding:12px;border-radius:6px;overflow:auto;font-size:13px}
code{font-family:ui-monospace,monospace}section.operation{border-top:1px solid #dde;padding:8px 0 16px}
.method{display:inline-block;min-width:56px;font-weight:700;font-size:12px;text-transform:uppercase}
.get{color:#0a7}.post{color:#06c}.patch{color:#a60}.delete{color:#c22}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #dde;padding:3px 8px;text-align:left}`;

function parametersTable(op: Json): string {
  const ps = op.parameters ?? [];
  if (ps.length === 0) return "";
  const rows = ps.map(
    (p: Json) =>
      `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${p.in}</td><td>${p.required ? "required" : ""}</td>` +
      `<td>${escapeHtml(p.schema?.enum?.join(" | ") ?? p.schema?.type ?? "")}</td></tr>`,
  );
  return `<table class="parameters"><thead><tr><th>parameter</th><th>in</th><th></th><th>type</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function responsesList(op: Json): string {
  const items = Object.entries<Json>(op.responses ?? {}).map(
    ([status, r]) => `<li><code>${status}</code> ${escapeHtml(r.description ?? "")}</li>`,
  );
  return `<ul class="responses">${items.join("")}</ul>`;
}

function operationSection(doc: Json, o: Operation): string {
  return `<section class="operation" id="op-${o.id}" data-operation="${o.id}">
<h3><span class="method ${o.method}">${o.method}</span> <code>${escapeHtml(o.path)}</code></h3>
<p>${escapeHtml(o.op.summary ?? "")}</p>${o.op.description ? `<p>${escapeHtml(o.op.description)}</p>` : ""}
<p>Operation id <code>${o.id}</code></p>
${parametersTable(o.op)}
<h4>Answers</h4>${responsesList(o.op)}
<h4>curl</h4><pre class="sample-curl"><code>${escapeHtml(curlSample(doc, o))}</code></pre>
<h4>TypeScript</h4><pre class="sample-typescript"><code>${escapeHtml(typescriptSample(doc, o))}</code></pre>
</section>`;
}

function navigation(groups: Map<string, Operation[]>): string {
  const guides = GUIDES.map((g) => `<a href="#${g.id}">${escapeHtml(g.title)}</a>`).join("");
  const ref = [...groups]
    .map(
      ([tag, ops]) =>
        `<h2>${escapeHtml(tag)}</h2>` +
        ops.map((o) => `<a href="#op-${o.id}">${o.method.toUpperCase()} ${escapeHtml(o.path)}</a>`).join(""),
    )
    .join("");
  return `<nav><h2>Guides</h2>${guides}${ref}<h2>More</h2><a href="/api/v1/openapi.json">OpenAPI document</a><a href="/api/v1/asyncapi.json">AsyncAPI document (NATS)</a><a href="/docs/explorer">Try it (Swagger UI)</a></nav>`;
}

export function renderDocsPage(doc: Json): string {
  const groups = new Map<string, Operation[]>();
  for (const o of operationsOf(doc)) {
    const tag = o.op.tags?.[0] ?? (o.path.startsWith("/admin/") ? "admin" : "other");
    groups.set(tag, [...(groups.get(tag) ?? []), o]);
  }
  const guides = GUIDES.map(
    (g) => `<section class="guide" id="${g.id}"><h2>${escapeHtml(g.title)}</h2>${g.html}</section>`,
  );
  const reference = [...groups].map(
    ([tag, ops]) =>
      `<section class="tag" id="tag-${escapeHtml(tag)}"><h2>${escapeHtml(tag)}</h2>${ops.map((o) => operationSection(doc, o)).join("\n")}</section>`,
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(doc.info?.title ?? "API")} reference</title><style>${STYLE}</style></head>
<body>${navigation(groups)}<main>
<h1>${escapeHtml(doc.info?.title ?? "API")}</h1>
<div id="guides">${guides.join("\n")}</div>
<div id="reference"><h1>Reference</h1>${reference.join("\n")}</div>
</main></body></html>
`;
}
