#!/usr/bin/env node
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { SCOPES } from "./keys.js";
import { DEMO_PIPELINE } from "./seed-data.js";

/**
 * The admin CLI (`npm run admin -- <command>`, `npm run seed`): a thin client
 * of the admin API. It finds the gateway and the admin token in the
 * environment (GATEWAY_URL, ADMIN_TOKEN), else in the file `npm start` writes
 * (.data/stack[-<FUNIL_ENV>].json).
 */

const USAGE = `usage: npm run admin -- <command>
  workspace:create <name> [--operator]
  workspace:list
  key:create <workspaceId> <name> [scope,scope,…]   (default: every scope)
  key:scopes <keyId> <scope,scope,…>
  key:revoke <keyId>
  member:create <workspaceId> <name> <email> <role>
  member:deactivate <workspaceId> <memberId>
  custom-field:create <workspaceId> <contact|opportunity> <fieldKey> <label> <type> [option,option,…]
  pipeline:create <workspaceId> <name> <stage,stage,…>
  calendar:create <workspaceId> <key> <name> <durationMin> <dailyCap> <timezone> <assigneeId,…>
                  <weekday,…@HH:MM-HH:MM[;…]> [slotIntervalMin]   e.g. "1,2,3,4,5@09:00-12:00;1,2,3,4,5@13:00-18:00"
  seed                          demo workspace, members, custom fields, a pipeline, a calendar and a key
environment: GATEWAY_URL (default http://127.0.0.1:$PORT or 8080), ADMIN_TOKEN; else the file npm start
writes, .data/stack.json (.data/stack-<FUNIL_ENV>.json when FUNIL_ENV is set)`;

const STACK_FILE = `.data/stack${process.env.FUNIL_ENV ? `-${process.env.FUNIL_ENV}` : ""}.json`;

function stackFile() {
  const file = fileURLToPath(new URL(`../../../${STACK_FILE}`, import.meta.url));
  if (!existsSync(file)) return {};
  try {
    return JSON.parse(readFileSync(file, "utf8")) as { gatewayUrl?: string; adminToken?: string };
  } catch {
    return {};
  }
}

const saved = stackFile();
const base = process.env.GATEWAY_URL ?? saved.gatewayUrl ?? `http://127.0.0.1:${process.env.PORT ?? 8080}`;
const token = process.env.ADMIN_TOKEN ?? saved.adminToken;

async function call(method: string, path: string, body?: unknown) {
  if (!token)
    throw new Error(
      `ADMIN_TOKEN is not set and ${STACK_FILE} has none: start the stack with npm start${
        process.env.FUNIL_ENV ? "" : " (with the same FUNIL_ENV as the stack, if it has one)"
      }, or set ADMIN_TOKEN and GATEWAY_URL`,
    );
  const res = await fetch(`${base}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  }).catch((err: Error) => {
    throw new Error(`cannot reach the gateway at ${base}: ${err.message} (is npm start running?)`);
  });
  const text = await res.text();
  const json = text ? JSON.parse(text) : null;
  if (!res.ok)
    throw Object.assign(new Error(`${method} ${path} → ${res.status} ${text}`), { status: res.status });
  return json;
}

const list = (s: string | undefined) =>
  s
    ? s
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean)
    : [];
/** "1,2,3@09:00-12:00;5@14:00-18:00" → one window per weekday and range (weekday 0 = Sunday). */
const availabilityOf = (spec: string) =>
  spec
    .split(";")
    .filter(Boolean)
    .flatMap((part) => {
      const [days = "", range = ""] = part.split("@");
      const [start, end] = range.split("-");
      return list(days).map((weekday) => ({ weekday: Number(weekday), start, end }));
    });
const print = (v: unknown) => console.log(JSON.stringify(v, null, 2));

async function seed() {
  const ws = await call("POST", "/workspaces", { name: "Demo Vendas", operator: true });
  const members = [];
  for (const [name, email, role] of [
    ["Olivia Owner", "olivia@demo.funil", "owner"],
    ["Otávio Operador", "otavio@demo.funil", "operador"],
    ["Ana Atendente", "ana@demo.funil", "atendente"],
    ["Vera Visualizadora", "vera@demo.funil", "visualizador"],
  ])
    members.push(await call("POST", `/workspaces/${ws.id}/members`, { name, email, role }));
  for (const field of [
    {
      entity: "contact",
      fieldKey: "plan",
      label: "Plano",
      type: "select",
      options: ["free", "pro", "enterprise"],
    },
    { entity: "contact", fieldKey: "seats", label: "Licenças", type: "number" },
    { entity: "opportunity", fieldKey: "segment", label: "Segmento", type: "text" },
  ])
    await call("POST", `/workspaces/${ws.id}/custom-fields`, field);
  // Pipelines and calendars belong to services that may not be part of this installation yet.
  const optional = async (what: string, path: string, body: unknown) => {
    try {
      return await call("POST", path, body);
    } catch (err) {
      if ((err as { status?: number }).status === 404)
        console.error(`(no ${what}: its service is not part of this installation yet)`);
      else throw err;
    }
  };
  const pipeline = await optional("pipeline", `/workspaces/${ws.id}/pipelines`, DEMO_PIPELINE);
  const calendar = await optional("calendar", `/workspaces/${ws.id}/calendars`, {
    key: "demo",
    name: "Demonstração",
    durationMin: 30,
    dailyCap: 8,
    timezone: "America/Sao_Paulo",
    assigneeUserIds: members.slice(1, 3).map((m) => m.id),
    availability: [1, 2, 3, 4, 5].map((weekday) => ({ weekday, start: "09:00", end: "18:00" })),
  });
  const key = await call("POST", `/workspaces/${ws.id}/keys`, { name: "demo key", scopes: [...SCOPES] });
  print({ workspace: ws, pipelineId: pipeline?.id ?? null, calendarId: calendar?.id ?? null, key: key.key });
  console.log(`\nYour API key (shown once): ${key.secret}`);
  console.log(`Try: curl -s ${base}/api/v1/members -H "Authorization: Bearer ${key.secret}"`);
}

async function main(argv: string[]) {
  const [command, ...args] = argv;
  switch (command) {
    case "workspace:create":
      return print(
        await call("POST", "/workspaces", { name: args[0], operator: args.includes("--operator") }),
      );
    case "workspace:list":
      return print(await call("GET", "/workspaces"));
    case "key:create": {
      const scopes = args[2] ? list(args[2]) : [...SCOPES];
      const res = await call("POST", `/workspaces/${args[0]}/keys`, { name: args[1], scopes });
      print(res.key);
      return console.log(`\nsecret (shown once): ${res.secret}`);
    }
    case "key:scopes":
      return print(await call("PATCH", `/keys/${args[0]}`, { scopes: list(args[1]) }));
    case "key:revoke":
      await call("DELETE", `/keys/${args[0]}`);
      return console.log("revoked");
    case "member:create":
      return print(
        await call("POST", `/workspaces/${args[0]}/members`, {
          name: args[1],
          email: args[2],
          role: args[3],
        }),
      );
    case "member:deactivate":
      return print(await call("PATCH", `/workspaces/${args[0]}/members/${args[1]}`, { active: false }));
    case "custom-field:create":
      return print(
        await call("POST", `/workspaces/${args[0]}/custom-fields`, {
          entity: args[1],
          fieldKey: args[2],
          label: args[3],
          type: args[4],
          ...(args[5] ? { options: list(args[5]) } : {}),
        }),
      );
    case "pipeline:create":
      return print(
        await call("POST", `/workspaces/${args[0]}/pipelines`, {
          name: args[1],
          stages: list(args[2]).map((name) => ({ name })),
        }),
      );
    case "calendar:create":
      return print(
        await call("POST", `/workspaces/${args[0]}/calendars`, {
          key: args[1],
          name: args[2],
          durationMin: Number(args[3]),
          dailyCap: Number(args[4]),
          timezone: args[5],
          assigneeUserIds: list(args[6]),
          availability: availabilityOf(args[7] ?? ""),
          ...(args[8] ? { slotIntervalMin: Number(args[8]) } : {}),
        }),
      );
    case "seed":
      return seed();
    default:
      console.error(USAGE);
      process.exitCode = command ? 2 : 0;
  }
}

main(process.argv.slice(2)).catch((err: Error) => {
  console.error(`error: ${err.message}`);
  process.exit(1);
});
