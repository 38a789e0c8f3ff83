import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";

/** The addresses a host name stands for (every A and AAAA record: the copies behind it). */
export type Lookup = (hostname: string) => Promise<string[]>;

export const systemLookup: Lookup = async (hostname) =>
  (await dnsLookup(hostname, { all: true })).map((a) => a.address);

/** One address of a service, as the pool sees it. */
export interface Member {
  /** host:port, as /metrics shows it. */
  readonly address: string;
  /** False from a refused or broken connection until a new one is made (the member probes it). */
  readonly up: boolean;
  /** Calls sent to it and not answered yet. */
  readonly inFlight: number;
  /** It left the pool (its address is no longer resolved): end its connection once its calls are done. */
  retire(): void;
}

/**
 * The base URLs of `<NAME>_URL`: one, or several separated by commas. Throws on an entry that is not an
 * http:// URL (the settings' schema has refused those already).
 */
export function parseBaseUrls(value: string): URL[] {
  const urls = value
    .split(",")
    .map((u) => u.trim())
    .filter(Boolean)
    .map((u) => new URL(u));
  if (urls.length === 0) throw new Error("no base URL");
  for (const u of urls) if (u.protocol !== "http:") throw new Error(`${u.href}: only http:// is spoken`);
  return urls;
}

/** The origin of one resolved address of a base URL. */
function originOf(url: URL, address: string): string {
  const host = isIP(address) === 6 ? `[${address}]` : address;
  return `http://${host}:${url.port || "80"}`;
}

/** An IP literal as URL.hostname writes it ([::1] for IPv6) without its brackets. */
const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, "$1");

/**
 * The copies of one service: every address of every base URL, a host name looked up again every
 * `resolveMs` (a Kubernetes headless Service or compose replicas answer with one address per copy), one
 * member per address (`open`), a member whose address is no longer listed retired.
 *
 * pick() takes, of the members that are up, the one with the fewest calls in flight, starting its scan
 * one further at every pick. Least-in-flight rather than plain round robin: a copy that answers slower
 * (a GC pause, a busier node, a cold cache after a restart) gets fewer calls as its backlog grows, and a
 * copy that just came (or came back) has none in flight and gets calls at once; with no load every copy
 * ties at zero and the rotating start makes it round robin. It costs one scan of a short array per call.
 */
export function addressPool<M extends Member>(opts: {
  urls: URL[];
  resolveMs: number;
  lookup: Lookup;
  open: (origin: string) => M;
  /** A lookup failed: the addresses known stay in use. */
  onResolveError?: (err: unknown) => void;
}) {
  const byOrigin = new Map<string, M>();
  let members: M[] = [];
  let next = 0;

  const update = (origins: string[]) => {
    const listed = new Set(origins);
    for (const [origin, m] of byOrigin)
      if (!listed.has(origin)) {
        byOrigin.delete(origin);
        m.retire();
      }
    for (const origin of listed) if (!byOrigin.has(origin)) byOrigin.set(origin, opts.open(origin));
    members = [...byOrigin.values()];
  };
  const resolve = async () => {
    try {
      const lists = await Promise.all(
        opts.urls.map(async (u) =>
          isIP(bare(u.hostname))
            ? [originOf(u, bare(u.hostname))]
            : (await opts.lookup(u.hostname)).map((a) => originOf(u, a)),
        ),
      );
      update(lists.flat());
    } catch (err) {
      opts.onResolveError?.(err);
    }
  };

  const named = opts.urls.some((u) => !isIP(bare(u.hostname)));
  let first: Promise<void> | undefined;
  if (named) {
    first = resolve().finally(() => {
      first = undefined;
    });
    setInterval(resolve, opts.resolveMs).unref();
  } else update(opts.urls.map((u) => originOf(u, bare(u.hostname))));

  return {
    /** The member for a call; undefined when none is known (yet) or `except` is the only one. */
    pick(except?: M): M | undefined {
      const n = members.length;
      if (++next >= n) next = 0;
      let best: M | undefined;
      let down: M | undefined;
      for (let i = 0; i < n; i++) {
        const m = members[(next + i) % n]!;
        if (m === except) continue;
        if (!m.up) down ??= m;
        else if (!best || m.inFlight < best.inFlight) best = m;
      }
      // Every copy down: the call tries one of them (it fails at once if it is still refused).
      return best ?? down;
    },
    /** The first lookup of a host name, while it runs (calls made meanwhile wait for it). */
    get resolving() {
      return first;
    },
    get members(): readonly M[] {
      return members;
    },
  };
}
export type AddressPool<M extends Member> = ReturnType<typeof addressPool<M>>;
