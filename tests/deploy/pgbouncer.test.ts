import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SERVICES } from "@funil/contracts";
import { clientsOf } from "@funil/rpc";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { isListening } from "../../scripts/infra.mjs";
// @ts-expect-error: plain ESM script without types, run by `npm run k8s`
import { manifests } from "../../scripts/k8s.mjs";
import { freePort } from "../chaos/servers.js";

/**
 * The pgbouncer.ini of deploy/k8s run as it is in front of this machine's PostgreSQL (its address, the
 * listening port and the userlist's path swapped for local ones): a service starts through it, creating
 * and migrating its database, and serves writes and reads that run the same named statements again.
 */
let dir: string;
let bouncer: ChildProcess;
let port: number;

beforeAll(async () => {
  const ini: string = manifests()["pgbouncer.yaml"].find((o: { kind: string }) => o.kind === "ConfigMap")
    .data["pgbouncer.ini"];
  const server = new URL(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
  port = await freePort();
  dir = mkdtempSync(join(tmpdir(), "funil-k8s-pgbouncer-"));
  // PgBouncer refuses to run as root: it then runs as nobody, who must read its files.
  chmodSync(dir, 0o755);
  const swap = (text: string, from: string, to: string) => {
    expect(text, `pgbouncer.ini says ${from}`).toContain(from);
    return text.replace(from, to);
  };
  let local = swap(
    ini,
    "host=postgres.funil.svc.cluster.local port=5432",
    `host=${server.hostname} port=${server.port || 5432}`,
  );
  local = swap(local, "listen_addr = 0.0.0.0", "listen_addr = 127.0.0.1");
  local = swap(local, "listen_port = 6432", `listen_port = ${port}`);
  local = swap(local, "auth_file = /etc/pgbouncer/userlist.txt", `auth_file = ${join(dir, "userlist.txt")}`);
  writeFileSync(join(dir, "pgbouncer.ini"), local, { mode: 0o644 });
  writeFileSync(join(dir, "userlist.txt"), `"${server.username || "postgres"}" "pgbouncer-test"\n`, {
    mode: 0o644,
  });
  const asRoot = process.getuid?.() === 0 ? ["-u", "nobody"] : [];
  bouncer = spawn("/usr/sbin/pgbouncer", [...asRoot, join(dir, "pgbouncer.ini")], { stdio: "ignore" });
  const deadline = Date.now() + 10_000;
  while (!(await isListening("127.0.0.1", port, 200))) {
    if (Date.now() > deadline) throw new Error("pgbouncer did not start");
    await new Promise((r) => setTimeout(r, 50));
  }
});

afterAll(async () => {
  if (bouncer && bouncer.exitCode === null) {
    const gone = new Promise((r) => bouncer.once("exit", r));
    bouncer.kill("SIGTERM");
    await gone;
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("PgBouncer of deploy/k8s (session mode)", () => {
  it("a service starts through it (creates and migrates its database) and serves writes and repeated reads", async () => {
    const server = new URL(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
    const child = spawn(process.execPath, ["services/crm/dist/main.js"], {
      env: {
        ...process.env,
        // A database of its own, created through PgBouncer at start.
        FUNIL_ENV: `${inject("funilEnv")}_pgbouncer`,
        DATABASE_URL: `postgres://${server.username || "postgres"}:pgbouncer-test@127.0.0.1:${port}/postgres`,
        NATS_URL: inject("natsUrl"),
        CRM_PORT: "0",
        LOG_LEVEL: "info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const listening = new Promise<number | undefined>((resolve) => {
      const read = (d: Buffer) => {
        output += d.toString();
        const line = output.split("\n").find((l) => l.includes('"msg":"crm listening"'));
        if (line) resolve(JSON.parse(line).port);
      };
      child.stdout!.on("data", read);
      child.stderr!.on("data", read);
      child.once("exit", () => resolve(undefined));
    });
    try {
      const crmPort = await listening;
      expect(crmPort, output).toBeTypeOf("number");
      const crm = clientsOf(SERVICES.crm, `http://127.0.0.1:${crmPort}`, 5000);
      const workspaceId = `ws_pgbouncer_${Date.now()}`;
      const { contact } = await crm.contacts.upsertContact({
        workspaceId,
        fields: { name: "Through PgBouncer", email: `pgbouncer.${Date.now()}@example.com` },
      });
      // The same statements twice on the session's connection: its prepared statements are still there.
      for (let i = 0; i < 2; i++) {
        expect((await crm.contacts.getContact({ workspaceId, id: contact!.id })).contact?.name).toBe(
          "Through PgBouncer",
        );
        const list = await crm.contacts.listContacts({ workspaceId, limit: 10 });
        expect(list.data.map((c) => c.id)).toEqual([contact!.id]);
      }
    } finally {
      const gone = new Promise<number | null>((r) => child.once("exit", r));
      child.kill("SIGTERM");
      expect(await gone, output).toBe(0);
    }
  });
});
