import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";
import { gatewayUrl, withKey } from "../helpers.js";

/** The path of a newcomer following the README: the traps it met, each closed. */
const run = promisify(execFile);
const cli = (args: string[], env: Record<string, string | undefined>) =>
  run("node", ["services/gateway/dist/cli.js", ...args], { env: { ...process.env, ...env } });

describe("README: npm start on a busy port", () => {
  it("stops before printing a banner or token, and leaves the running stack's file alone", async () => {
    const busy = createServer();
    const port = await new Promise<number>((resolve) =>
      busy.listen(0, "127.0.0.1", () => resolve((busy.address() as { port: number }).port)),
    );
    const env = `${inject("funilEnv")}busy`;
    const file = `.data/stack-${env}.json`;
    mkdirSync(".data", { recursive: true });
    const running = `${JSON.stringify({ gatewayUrl: `http://127.0.0.1:${port}`, adminToken: "the-running-one", pid: 1 })}\n`;
    writeFileSync(file, running);
    try {
      const started = run("node", ["scripts/start.mjs"], {
        env: { ...process.env, FUNIL_ENV: env, PORT: String(port), ADMIN_TOKEN: undefined },
        timeout: 60_000,
      });
      const failure = await started.then(
        () => undefined,
        (err: { code: number; stdout: string; stderr: string }) => err,
      );
      expect(failure?.code).toBe(1);
      expect(failure?.stderr).toMatch(new RegExp(`port ${port} is already in use`));
      expect(failure?.stdout).not.toMatch(/Admin token/);
      expect(readFileSync(file, "utf8")).toBe(running);
    } finally {
      busy.close();
      rmSync(file, { force: true });
    }
  });
});

describe("docs/api/admin.md §CLI", () => {
  const env = { GATEWAY_URL: gatewayUrl(), ADMIN_TOKEN: inject("adminToken"), FUNIL_ENV: inject("funilEnv") };

  it("its help lists exactly the commands the README lists", async () => {
    const { stderr } = await cli([], env);
    const helped = [...stderr.matchAll(/^ {2}([a-z-]+(?::[a-z-]+)?)\b/gm)].map((m) => m[1]);
    const readme = readFileSync("README.md", "utf8");
    const documented = [
      ...new Set([...readme.matchAll(/npm run admin -- ([a-z-]+(?::[a-z-]+)?)/g)].map((m) => m[1])),
    ];
    expect(helped.sort()).toEqual(documented.sort());
    expect(helped).toContain("pipeline:create");
  });

  it("pipeline:create gives a workspace made with workspace:create a pipeline deals can use", async () => {
    const ws = JSON.parse((await cli(["workspace:create", "CLI pipelines"], env)).stdout);
    const created = JSON.parse(
      (await cli(["pipeline:create", ws.id, "Vendas", "Novo, Proposta,Fechamento"], env)).stdout,
    );
    expect(created.stages.map((s: { name: string }) => s.name)).toEqual(["Novo", "Proposta", "Fechamento"]);
    const key = /secret \(shown once\): (fnl_\w+)/.exec(
      (await cli(["key:create", ws.id, "k"], env)).stdout,
    )![1]!;
    const api = withKey(ws.id, key);
    const contact = await api.call("POST", "/contacts", { name: "Maria", phone: "11988887777" });
    const deal = await api.call("POST", "/opportunities", {
      contactId: contact.body.id,
      pipelineId: created.id,
      title: "Plano Pro",
    });
    expect(deal.status).toBe(201);
    expect(deal.body.stageId).toBe(created.stages[0].id);
  });

  it("without ADMIN_TOKEN it names the stack file it looked in (stack-<FUNIL_ENV>.json)", async () => {
    const missing = `${inject("funilEnv")}none`;
    expect(existsSync(`.data/stack-${missing}.json`)).toBe(false);
    const failure = await cli(["workspace:list"], {
      ...env,
      ADMIN_TOKEN: undefined,
      FUNIL_ENV: missing,
    }).then(
      () => undefined,
      (err: { stderr: string }) => err,
    );
    expect(failure?.stderr).toMatch(new RegExp(`\\.data/stack-${missing}\\.json`));
  });

  it("seed makes the demo pipeline and calendar, and the help names calendar:create", async () => {
    const { stdout, stderr } = await cli(["seed"], env);
    const printed = JSON.parse(stdout.slice(0, stdout.indexOf("\nYour API key")));
    expect(printed.pipelineId).toMatch(/\w/);
    // scheduling is part of this installation: seed makes the demo calendar and says nothing is missing.
    expect(printed.calendarId).toMatch(/\w/);
    expect(stderr).not.toMatch(/no calendar/);
    const { stderr: help } = await cli([], env);
    expect(help).toMatch(/calendar:create/);
    expect(help).toMatch(/a pipeline, a calendar and a key/);
  });
});
