import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectBus, ensureStreams, type NatsConnection, publisher } from "@funil/bus";
import { naming } from "@funil/config";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain ESM script without types, run by `npm run k8s`
import { manifests } from "../../scripts/k8s.mjs";
import { freePort } from "../chaos/servers.js";

/**
 * The NATS configuration of deploy/k8s run as it is, three servers on this machine's loopback (the
 * cluster's DNS names and ports swapped for local ones): they form one JetStream cluster that answers the
 * readiness probe's /healthz, and NATS_STREAM_REPLICAS=3 keeps a stream on all three.
 */
const SERVERS = 3;
const dirs: string[] = [];
const servers: ChildProcess[] = [];
let nc: NatsConnection;
const names = naming(`${process.env.FUNIL_TEST_ENV}_k8s_cluster`);

async function healthy(port: number) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nats on monitor port ${port} never became healthy`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  const conf: string = manifests()["nats.yaml"].find((o: { kind: string }) => o.kind === "ConfigMap").data[
    "nats.conf"
  ];
  const ports = [];
  for (let i = 0; i < SERVERS; i++)
    ports.push({ client: await freePort(), cluster: await freePort(), monitor: await freePort() });
  const swap = (text: string, from: string, to: string) => {
    expect(text, `nats.conf names ${from}`).toContain(from);
    return text.replaceAll(from, to);
  };
  for (let i = 0; i < SERVERS; i++) {
    const dir = mkdtempSync(join(tmpdir(), "funil-k8s-nats-"));
    dirs.push(dir);
    let local = conf;
    for (let j = 0; j < SERVERS; j++)
      local = swap(local, `nats-${j}.nats.funil.svc.cluster.local:6222`, `127.0.0.1:${ports[j]!.cluster}`);
    local = swap(local, "listen: 0.0.0.0:4222", `listen: 127.0.0.1:${ports[i]!.client}`);
    local = swap(local, "listen: 0.0.0.0:6222", `listen: 127.0.0.1:${ports[i]!.cluster}`);
    local = swap(local, "http: 0.0.0.0:8222", `http: 127.0.0.1:${ports[i]!.monitor}`);
    local = swap(local, "store_dir: /data", `store_dir: "${dir}/data"`);
    writeFileSync(join(dir, "nats.conf"), local);
    servers.push(
      spawn("/usr/sbin/nats-server", ["-c", join(dir, "nats.conf")], {
        env: { ...process.env, POD_NAME: `nats-${i}` },
        stdio: "ignore",
      }),
    );
  }
  await Promise.all(ports.map((p) => healthy(p.monitor)));
  nc = await connectBus(ports.map((p) => `nats://127.0.0.1:${p.client}`).join(","), "k8s-cluster-test");
}, 60_000);

afterAll(async () => {
  await nc?.close();
  await Promise.all(
    servers.map((s) => {
      if (s.exitCode !== null) return undefined;
      const gone = new Promise((r) => s.once("exit", r));
      s.kill("SIGKILL");
      return gone;
    }),
  );
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("NATS cluster of deploy/k8s", () => {
  it("NATS_STREAM_REPLICAS=3: a stream kept on one server moves to all three, its messages kept", async () => {
    const jsm = await jetstreamManager(nc);
    await ensureStreams(nc, names, ["EVENTS"], { replicas: 1 });
    await publisher(nc)(
      names.subject("events.k8s.test"),
      new TextEncoder().encode("{}"),
      `k8s-${Date.now()}`,
    );
    expect((await jsm.streams.info(names.stream("EVENTS"))).config.num_replicas).toBe(1);

    await ensureStreams(nc, names, ["EVENTS"], { replicas: 3 });
    await expect
      .poll(
        async () => {
          const info = await jsm.streams.info(names.stream("EVENTS"));
          return [info.config.num_replicas, info.cluster?.replicas?.length, info.state.messages];
        },
        { timeout: 15_000, interval: 200 },
      )
      .toEqual([3, 2, 1]);
    // A new stream is created on all three at once.
    await ensureStreams(nc, names, ["INGEST"], { replicas: 3 });
    expect((await jsm.streams.info(names.stream("INGEST"))).config.num_replicas).toBe(3);
  });

  it("more replicas than the cluster has servers stops the start with a message naming the setting", async () => {
    await expect(ensureStreams(nc, names, ["PLATFORM"], { replicas: 5 })).rejects.toThrow(
      /^NATS_STREAM_REPLICAS=5: NATS cannot keep stream \S+ on 5 servers/,
    );
  });
});
