import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { ensureInfra, isListening, pgDataDir, stopPrivateInfra } from "../../scripts/infra.mjs";

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

describe("npm start's infrastructure (docs/operations.md §Processes and servers)", () => {
  // A checkout the postgres user can reach keeps PostgreSQL's data inside it; one it cannot reach (under
  // /root, or a mode-700 temporary folder, as when root runs it) gets a folder of the postgres user's own.
  it.each([
    ["a reachable folder", 0o755],
    ["a mode-700 folder", 0o700],
  ])(
    "starts private PostgreSQL, Redis and NATS when nothing answers (%s), and stops them",
    async (_, mode) => {
      const [pg, redis, nats] = [await freePort(), await freePort(), await freePort()];
      const dataDir = mkdtempSync(join(tmpdir(), "funil-infra-"));
      chmodSync(dataDir, mode);
      const urls = {
        databaseUrl: `postgres://postgres@127.0.0.1:${pg}/postgres`,
        redisUrl: `redis://127.0.0.1:${redis}`,
        natsUrl: `nats://127.0.0.1:${nats}`,
        dataDir,
        log: () => {},
      };
      try {
        const started = await ensureInfra(urls);
        expect(started).toMatchObject({
          postgresql: { started: true },
          redis: { started: true },
          nats: { started: true },
        });
        if (mode === 0o755) expect(existsSync(join(dataDir, "pg", "PG_VERSION"))).toBe(true);
        const sql = postgres(urls.databaseUrl, { max: 1, onnotice: () => {} });
        expect((await sql`select 1 as one`)[0]).toEqual({ one: 1 });
        await sql.end();
        const nc = await connect({ servers: `127.0.0.1:${nats}` });
        expect(nc.info?.jetstream).toBe(true);
        await nc.close();
        expect(await isListening("127.0.0.1", redis)).toBe(true);
        // A second call finds them answering and starts nothing.
        expect(await ensureInfra(urls)).toMatchObject({
          postgresql: { started: false },
          redis: { started: false },
          nats: { started: false },
        });
      } finally {
        await stopPrivateInfra(dataDir);
        rmSync(pgDataDir(dataDir), { recursive: true, force: true });
        rmSync(dataDir, { recursive: true, force: true });
      }
      for (const port of [pg, redis, nats]) expect(await isListening("127.0.0.1", port)).toBe(false);
    },
    90_000,
  );
});
