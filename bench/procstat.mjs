// CPU time and resident memory of the processes under test, read from /proc (Linux only): the cost per
// request is measured, not guessed from a profile. utime + stime of /proc/<pid>/stat count every thread
// of the process (GC helpers and libuv's pool included).
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

const TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

/** The pids of the processes whose command is `comm` (e.g. "nats-server"). */
export function pidsNamed(comm) {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/comm`, "utf8").trim() === comm;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** The PostgreSQL backends (pids) of the given application names, asked through `sql`. */
export async function backendsOf(sql, apps) {
  const rows = await sql`
    select pid from pg_stat_activity where split_part(application_name, ':', 1) = any(${apps})`;
  return rows.map((r) => r.pid);
}

/** CPU seconds used so far by one process, or undefined when it is gone. */
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** Resident set size in MB, or undefined when the process is gone. */
export function rssMb(pid) {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Watches groups of processes ({ name: () => pids }) over one measurement: start() takes the CPU
 * counters, samples RSS every 250 ms while the load runs, stop() returns per group the CPU seconds
 * used and the highest RSS of any one of its processes (the budget is per process; PostgreSQL's
 * backends share their buffers, so a sum would count them several times). A group's pids are read again at stop, so a PostgreSQL backend
 * that appeared during the run counts from zero.
 */
export function watch(groups) {
  const before = new Map();
  const peak = new Map();
  let timer;
  const sample = () => {
    for (const [name, pidsOf] of Object.entries(groups)) {
      const rss = Math.max(0, ...pidsOf().map((pid) => rssMb(pid) ?? 0));
      peak.set(name, Math.max(peak.get(name) ?? 0, rss));
    }
  };
  return {
    start() {
      for (const [name, pidsOf] of Object.entries(groups))
        before.set(name, new Map(pidsOf().map((pid) => [pid, cpuSeconds(pid) ?? 0])));
      timer = setInterval(sample, 250);
    },
    stop() {
      clearInterval(timer);
      sample();
      const out = {};
      for (const [name, pidsOf] of Object.entries(groups)) {
        const start = before.get(name);
        const cpu = pidsOf().reduce((sum, pid) => sum + ((cpuSeconds(pid) ?? 0) - (start.get(pid) ?? 0)), 0);
        out[name] = { cpu, rss: peak.get(name) };
      }
      return out;
    },
  };
}
