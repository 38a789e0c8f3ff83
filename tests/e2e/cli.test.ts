import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";
import { gatewayUrl, withKey } from "../helpers.js";

const run = promisify(execFile);

describe("admin CLI and seed (docs/api/admin.md §Routes)", () => {
  it("npm run seed creates a demo workspace and prints a working key", async () => {
    const { stdout } = await run("node", ["services/gateway/dist/cli.js", "seed"], {
      env: {
        ...process.env,
        GATEWAY_URL: gatewayUrl(),
        ADMIN_TOKEN: inject("adminToken"),
        FUNIL_ENV: inject("funilEnv"),
      },
    });
    const key = /Your API key \(shown once\): (fnl_\w+)/.exec(stdout)?.[1];
    expect(key).toBeDefined();
    const ws = withKey("", key!);
    const members = await ws.call("GET", "/members");
    expect(members.status).toBe(200);
    expect(members.body.data.map((m: { role: string }) => m.role)).toEqual([
      "owner",
      "operador",
      "atendente",
      "visualizador",
    ]);
    const fields = await ws.call("GET", "/custom-fields");
    expect(fields.body.data.length).toBeGreaterThanOrEqual(3);
  });

  it("key:create and key:revoke wrap the admin API", async () => {
    const env = {
      ...process.env,
      GATEWAY_URL: gatewayUrl(),
      ADMIN_TOKEN: inject("adminToken"),
      FUNIL_ENV: inject("funilEnv"),
    };
    const ws = JSON.parse(
      (await run("node", ["services/gateway/dist/cli.js", "workspace:create", "CLI ws"], { env })).stdout,
    );
    const out = (
      await run("node", ["services/gateway/dist/cli.js", "key:create", ws.id, "cli", "contacts.read"], {
        env,
      })
    ).stdout;
    const secret = /secret \(shown once\): (fnl_\w+)/.exec(out)![1]!;
    const keyId = /"id": "(key_\w+)"/.exec(out)![1]!;
    expect((await withKey(ws.id, secret).call("GET", "/contacts")).status).toBe(200);
    await run("node", ["services/gateway/dist/cli.js", "key:revoke", keyId], { env });
    expect((await withKey(ws.id, secret).call("GET", "/contacts")).status).toBe(401);
    await expect(
      run("node", ["services/gateway/dist/cli.js", "key:revoke", "key_nope"], { env }),
    ).rejects.toMatchObject({ code: 1 });
  });
});
