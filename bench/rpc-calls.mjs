// What one RPC hop costs in CPU (`npm run bench:rpc-calls`): the services' own client and server
// (packages/rpc: the lean unary path over the batch channel, the hand-written codec) against a raw POST loop
// on node:http with keep-alive, carrying the same protobuf bytes and encoding and decoding them with the same
// codec, so that the difference is the transport alone. Client and server run in this one process, so the
// CPU per call (process.cpuUsage) counts both ends. Calls are made in waves of `c` concurrent ones (1, 8 and
// 32: a gateway's requests in flight); both sides alternate round after round; medians. The method is
// scheduling's GetAppointment, answering an appointment of realistic length. The dated results live in
// bench/RESULTS-rpc-calls.md.
//
//   npm run build && npm run bench:rpc-calls
//   BENCH_ROUNDS=5 BENCH_MS=1500     rounds, and the time each side runs per round and concurrency
//   BENCH_CONCURRENCY=1,8,32         the waves' sizes
//   BENCH_TRACING=1                  tracing on in this process, parent-based at 0 % (an endpoint nothing
//                                    listens on; nothing is recorded): what work not sampled adds to a hop
import http from "node:http";
import os from "node:os";
import { createLogger } from "@funil/config";
import { AppointmentService } from "@funil/contracts";
import { startTracing } from "@funil/telemetry";
import { rpcClient } from "../packages/rpc/dist/client.js";
import { codecOf } from "../packages/rpc/dist/codec.js";
import { startRpcServer } from "../packages/rpc/dist/server.js";

const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const msPerRound = Number(process.env.BENCH_MS ?? 1500);
const concurrency = (process.env.BENCH_CONCURRENCY ?? "1,8,32").split(",").map(Number);
const tracing = process.env.BENCH_TRACING === "1";
if (tracing)
  await startTracing("bench", {
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9",
    OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
    OTEL_TRACES_SAMPLER_ARG: "0",
  });

const method = AppointmentService.method.getAppointment;
const question = { workspaceId: "ws_01JDEMO0000000000000000000", id: "apt_01JDEMO0000000000000000000" };
const appointment = {
  id: question.id,
  contactId: "ctc_01JDEMO0000000000000000000",
  contactName: "Maria Conceição",
  title: "Product demo",
  location: "Video call",
  conferenceUrl: "https://meet.example.com/abc-defg-hij",
  startAt: "2026-11-30T14:00:00.000Z",
  endAt: "2026-11-30T14:30:00.000Z",
  calendarKey: "sales-demo",
  assigneeUserId: "usr_01JDEMO0000000000000000000",
  status: "scheduled",
  createdAt: "2026-11-20T09:12:44.120Z",
  updatedAt: "2026-11-20T09:12:44.120Z",
};
const answer = { appointment };

/** The services' client and server: the lean path over the batch channel. */
async function funilSide() {
  const server = await startRpcServer({
    port: 0,
    log: createLogger("bench", "silent"),
    routes: (router) => router.service(AppointmentService, { getAppointment: async () => answer }),
  });
  const client = rpcClient(AppointmentService, `http://127.0.0.1:${server.port}`);
  return { call: () => client.getAppointment(question), close: () => server.close() };
}

/** A raw POST loop: node:http with keep-alive, the same bytes through the same codec. */
async function rawSide() {
  const input = codecOf(method.input);
  const output = codecOf(method.output);
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      input.decode(Buffer.concat(chunks));
      const body = output.encode(answer);
      res.writeHead(200, { "content-type": "application/proto", "content-length": body.byteLength });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const { port } = server.address();
  const call = () =>
    new Promise((resolve, reject) => {
      const body = input.encode(question);
      const req = http.request(
        {
          host: "127.0.0.1",
          port,
          path: "/funil.scheduling.v1.AppointmentService/GetAppointment",
          method: "POST",
          agent,
          headers: { "content-type": "application/proto", "content-length": body.byteLength },
        },
        (res) => {
          const chunks = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => resolve(output.decode(Buffer.concat(chunks))));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  return {
    call,
    close: async () => {
      agent.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Waves of `c` concurrent calls for `ms`: calls made, CPU µs per call, wall µs per wave. */
async function run(side, c, ms) {
  let calls = 0;
  let waves = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    const got = await Promise.all(Array.from({ length: c }, side.call));
    if (got[0].appointment?.id !== appointment.id)
      throw new Error("the answer is not the appointment asked for");
    calls += c;
    waves++;
  }
  const cpu = process.cpuUsage(cpu0);
  return { cpuUs: (cpu.user + cpu.system) / calls, waveUs: ((performance.now() - t0) * 1000) / waves };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sides = { funil: await funilSide(), raw: await rawSide() };
// Warm both (JIT, connections) before measuring.
for (const side of Object.values(sides)) await run(side, 8, 1000);

const rows = [];
for (const c of concurrency) {
  const seen = { funil: [], raw: [], waveFunil: [], waveRaw: [] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? ["funil", "raw"] : ["raw", "funil"];
    for (const name of order) {
      const m = await run(sides[name], c, msPerRound);
      seen[name].push(m.cpuUs);
      seen[name === "funil" ? "waveFunil" : "waveRaw"].push(m.waveUs);
    }
  }
  const funil = median(seen.funil);
  const raw = median(seen.raw);
  rows.push({ c, funil, raw, waveFunil: median(seen.waveFunil), waveRaw: median(seen.waveRaw) });
  process.stderr.write(
    `[bench:rpc-calls] ${c} in flight: funil ${funil.toFixed(1)} µs, raw ${raw.toFixed(1)} µs a call\n`,
  );
}
for (const side of Object.values(sides)) await side.close();

const f1 = (x) => x.toFixed(1);
const load = os
  .loadavg()
  .map((x) => x.toFixed(1))
  .join(" ");
console.log(
  `## ${new Date().toISOString().slice(0, 10)} · ${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}) · node ${process.version} · load average ${load} at the end · ${rounds} rounds × ${msPerRound} ms per side and concurrency, medians${tracing ? " · tracing on, 0 % sampled" : ""}\n`,
);
console.log(
  "| calls in flight | funil CPU µs a call (client + server) | raw POST loop CPU µs a call | funil ÷ raw | funil µs a wave | raw µs a wave |",
);
console.log("|---:|---:|---:|---:|---:|---:|");
for (const r of rows)
  console.log(
    `| ${r.c} | ${f1(r.funil)} | ${f1(r.raw)} | ${(r.funil / r.raw).toFixed(2)} | ${Math.round(r.waveFunil)} | ${Math.round(r.waveRaw)} |`,
  );
process.exit(0);
