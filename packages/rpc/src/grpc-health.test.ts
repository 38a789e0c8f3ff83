import { fileURLToPath } from "node:url";
import { ContactService } from "@funil/contracts";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { pino } from "pino";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { startRpcServer } from "./server.js";

const protoDir = fileURLToPath(new URL("../../../proto", import.meta.url));

/** A plain gRPC client of the standard health service, as Kubernetes' probes and grpc_health_probe are. */
function healthClient(port: number) {
  const def = protoLoader.loadSync("grpc/health/v1/health.proto", { includeDirs: [protoDir], enums: String });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    grpc: { health: { v1: { Health: new (addr: string, creds: grpc.ChannelCredentials) => grpc.Client } } };
  };
  const client = new pkg.grpc.health.v1.Health(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const check = (service: string) =>
    new Promise<string>((resolve, reject) =>
      (
        client as unknown as Record<
          string,
          (r: unknown, cb: (e: Error | null, r: { status: string }) => void) => void
        >
      ).Check!({ service }, (err, res) => (err ? reject(err) : resolve(res.status))),
    );
  return { check, close: () => client.close() };
}

const databases: postgres.Sql[] = [];
afterAll(async () => {
  await Promise.all(databases.map((sql) => sql.end({ timeout: 1 })));
});

async function server(databaseUrl: string) {
  const sql = postgres(databaseUrl, { max: 1, connect_timeout: 1, onnotice: () => {} });
  databases.push(sql);
  return startRpcServer({
    port: 0,
    log: pino({ level: "silent" }),
    routes: (router) => router.service(ContactService, {}),
    health: { service: "crm", sql },
  });
}

describe("grpc.health.v1.Health on every RPC server (probes of Kubernetes and gRPC tools)", () => {
  it('SERVING for the server (""), its Connect services and its own name; NOT_FOUND for another name', async () => {
    const s = await server("postgres://postgres@127.0.0.1:5432/postgres");
    const health = healthClient(s.port);
    try {
      expect(await health.check("")).toBe("SERVING");
      expect(await health.check("funil.crm.v1.ContactService")).toBe("SERVING");
      expect(await health.check("crm")).toBe("SERVING");
      await expect(health.check("funil.nope.v1.NopeService")).rejects.toMatchObject({
        code: grpc.status.NOT_FOUND,
      });
      // Once the server is stopping, before it closes: load balancers take it out.
      s.stopping();
      expect(await health.check("")).toBe("NOT_SERVING");
    } finally {
      health.close();
      await s.close();
    }
  });

  it("NOT_SERVING while the database does not answer", async () => {
    const s = await server("postgres://postgres@127.0.0.1:9/postgres");
    const health = healthClient(s.port);
    try {
      expect(await health.check("")).toBe("NOT_SERVING");
    } finally {
      health.close();
      await s.close();
    }
  });
});
