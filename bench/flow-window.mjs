// HTTP/2 flow-control windows on the batch channel's shape (packages/rpc/src/flow.ts): one long-lived
// stream per session carrying requests and answers in the channel's envelopes (channel.ts), calls in
// flight answered in any order.
// A server process answers each small request with a page of PAGE bytes; this process calls it with
// IN_FLIGHT calls at once, in rounds alternating HTTP/2's default windows (64 KiB) and flow.ts' (1 MiB a
// stream, 8 MiB a session), and prints calls/s and the CPU µs per call of each end (/proc and cpuUsage).
//
//   node bench/flow-window.mjs            (PAGE=55000 IN_FLIGHT=8 ROUNDS=3 SECONDS=4)
import { fork } from "node:child_process";
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import { EnvelopeReader, envelope } from "../packages/rpc/dist/channel.js";
import { flowSettings, widenSessionWindow } from "../packages/rpc/dist/flow.js";

const PAGE = Number(process.env.PAGE ?? 55_000);
const IN_FLIGHT = Number(process.env.IN_FLIGHT ?? 8);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SECONDS = Number(process.env.SECONDS ?? 4);

/** flow.ts' windows, or HTTP/2's defaults. */
const settingsOf = (wide) => (wide ? flowSettings : {});

function serve(wide) {
  const page = Buffer.alloc(PAGE, 97);
  const server = http2.createServer({ settings: settingsOf(wide) });
  server.on("session", (s) => wide && widenSessionWindow(s));
  server.on("stream", (stream) => {
    stream.respond({ ":status": 200 });
    const reader = new EnvelopeReader(Number.POSITIVE_INFINITY);
    stream.on("data", (chunk) => {
      for (const _ of reader.push(chunk)) setImmediate(() => stream.write(envelope(0, page)));
    });
  });
  server.listen(0, "127.0.0.1", () => process.send(server.address().port));
}

const cpuOf = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) * 10_000; // clock ticks of 10 ms, in µs
};

async function round(wide) {
  const child = fork(new URL(import.meta.url).pathname, ["serve", wide ? "wide" : "default"]);
  const [port] = await new Promise((resolve) => child.once("message", (m) => resolve([m])));
  const session = http2.connect(`http://127.0.0.1:${port}`, { settings: settingsOf(wide) });
  if (wide) session.once("connect", () => widenSessionWindow(session));
  const stream = session.request({ ":method": "POST", ":path": "/" });
  const waiting = [];
  const reader = new EnvelopeReader(Number.POSITIVE_INFINITY);
  stream.on("data", (chunk) => {
    for (const _ of reader.push(chunk)) waiting.shift()();
  });
  const request = envelope(0, Buffer.alloc(4));
  const call = () => new Promise((resolve) => waiting.push(resolve) && stream.write(request));
  const run = async (ms) => {
    let done = 0;
    const end = Date.now() + ms;
    const worker = async () => {
      while (Date.now() < end) {
        await call();
        done++;
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    return done;
  };
  await run(1000);
  const [mine, theirs, started] = [process.cpuUsage(), cpuOf(child.pid), Date.now()];
  const calls = await run(SECONDS * 1000);
  const used = process.cpuUsage(mine);
  const result = {
    perSecond: Math.round(calls / ((Date.now() - started) / 1000)),
    client: Math.round((used.user + used.system) / calls),
    server: Math.round((cpuOf(child.pid) - theirs) / calls),
  };
  session.destroy();
  child.kill();
  return result;
}

if (process.argv[2] === "serve") serve(process.argv[3] === "wide");
else {
  console.log(
    `${PAGE} bytes an answer, ${IN_FLIGHT} calls in flight, ${ROUNDS} rounds of ${SECONDS} s each way`,
  );
  console.log("| round | windows | calls/s | client µs/call | server µs/call |\n|---|---|---:|---:|---:|");
  for (let r = 1; r <= ROUNDS; r++)
    for (const wide of r % 2 ? [false, true] : [true, false]) {
      const x = await round(wide);
      console.log(
        `| ${r} | ${wide ? "1 MiB / 8 MiB" : "default 64 KiB"} | ${x.perSecond} | ${x.client} | ${x.server} |`,
      );
    }
}
