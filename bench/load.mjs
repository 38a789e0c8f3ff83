// One measurement: autocannon against one URL for a fixed time, with the CPU time and RSS of the
// processes under test read from /proc over exactly that time.
import { randomUUID } from "node:crypto";
import autocannon from "autocannon";
import { watch } from "./procstat.mjs";

/** The q-quantile of sorted numbers. */
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

/**
 * Drives `url` with `connections` connections for `seconds` s (at `rate` req/s in all when given: the
 * open-loop run). `groups` maps a process group's name to a function returning its pids. Latencies are
 * recorded from every 2xx answer in fractional ms (autocannon's own histogram rounds to whole ms, too
 * coarse for a 1 ms route). A fresh Idempotency-Key per request when `idempotent`, so each one creates.
 */
export async function measure({
  url,
  method = "GET",
  body,
  key,
  connections,
  seconds,
  rate,
  idempotent,
  requests,
  groups,
}) {
  const latencies = [];
  const watcher = watch(groups);
  watcher.start();
  const instance = autocannon({
    url,
    method,
    body,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    connections,
    duration: seconds,
    overallRate: rate,
    requests:
      requests ??
      (idempotent
        ? [
            {
              setupRequest: (req) => ({
                ...req,
                headers: { ...req.headers, "idempotency-key": randomUUID() },
              }),
            },
          ]
        : undefined),
  });
  const refused = {};
  instance.on("response", (_client, status, _bytes, ms) => {
    if (status >= 200 && status < 300) latencies.push(ms);
    else refused[status] = (refused[status] ?? 0) + 1;
  });
  const result = await instance;
  const used = watcher.stop();
  latencies.sort((a, b) => a - b);
  const ok = latencies.length;
  const cpuUs = {};
  const rssMb = {};
  for (const [name, { cpu, rss }] of Object.entries(used)) {
    cpuUs[name] = ok ? (cpu * 1e6) / ok : 0;
    rssMb[name] = rss;
  }
  return {
    rps: ok / (result.duration || seconds),
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    errors: result.non2xx + result.errors + result.timeouts,
    // What the errors were: answers by status, plus connection errors and timeouts.
    errorKinds: {
      ...refused,
      ...(result.errors && { errors: result.errors }),
      ...(result.timeouts && { timeouts: result.timeouts }),
    },
    cpuUs,
    rssMb,
  };
}

/** The median of each number of several measurements; RSS is the highest seen instead. */
export function median(measurements) {
  const mid = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const pick = (f) => mid(measurements.map(f));
  const groups = Object.keys(measurements[0].cpuUs);
  return {
    rps: pick((m) => m.rps),
    p50: pick((m) => m.p50),
    p99: pick((m) => m.p99),
    errors: measurements.reduce((n, m) => n + m.errors, 0),
    callsPerStream: measurements[0].callsPerStream === undefined ? undefined : pick((m) => m.callsPerStream),
    cpuUs: Object.fromEntries(groups.map((g) => [g, pick((m) => m.cpuUs[g])])),
    rssMb: Object.fromEntries(groups.map((g) => [g, Math.max(...measurements.map((m) => m.rssMb[g] ?? 0))])),
  };
}
