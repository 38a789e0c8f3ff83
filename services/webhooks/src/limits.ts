/**
 * How many attempts run at once (issue 11: one slow or dead receiver never
 * holds up the others): at most `total` overall, at most `perKey` for one
 * subscription. An attempt waits first for a slot of its subscription, then
 * for one of the overall slots, each in arrival order: a subscription whose
 * receiver hangs holds at most `perKey` of the overall slots, never more.
 *
 * A job is taken in (hold) only while its subscription's backlog (deliveries
 * taken in and not yet attempted) is small; otherwise it is handed back to JetStream for
 * `backoffMs(key)`: about as long as that subscription's attempts have been
 * taking, or as long as its oldest running attempt has been running if that
 * is longer, so a receiver that hangs until the timeout is asked again when a
 * slot may be free (its jobs do not bounce every 100 ms while its first
 * attempts hang), and a fast one at once.
 */
export class InFlight {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly keys = new Map<string, KeyState>();
  private readonly durations = new Map<string, number>();
  /** Deliveries taken in and not yet attempted, per key and over all keys; who waits for room. */
  private readonly held = new Map<string, number>();
  private heldTotal = 0;
  private readonly roomWaiters: Array<() => void> = [];

  constructor(
    readonly total: number,
    readonly perKey: number,
    private readonly maxBackoffMs: number,
  ) {}

  /** Deliveries of `key` taken in (hold) and not yet settled. */
  backlog(key: string): number {
    return this.held.get(key) ?? 0;
  }

  /** Takes in `n` deliveries of `key`; each is settled when its attempt is over. */
  hold(key: string, n: number): void {
    this.held.set(key, (this.held.get(key) ?? 0) + n);
    this.heldTotal += n;
  }

  settle(key: string, n = 1): void {
    const left = (this.held.get(key) ?? n) - n;
    if (left <= 0) this.held.delete(key);
    else this.held.set(key, left);
    this.heldTotal -= n;
    if (this.roomWaiters.length > 0) for (const wake of this.roomWaiters.splice(0)) wake();
  }

  /** Resolves once fewer than `bound` deliveries are held, over all keys. */
  async room(bound: number): Promise<void> {
    while (this.heldTotal >= bound) await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
  }

  /** Waits for a slot of `key`, then for an overall slot; release() gives both back. */
  async acquire(key: string): Promise<() => void> {
    let k = this.keys.get(key);
    if (!k) {
      k = { running: 0, waiting: [], started: [] };
      this.keys.set(key, k);
    }
    const state = k;
    // A released slot is handed straight to the next waiter, so the counts stay as they are then.
    if (state.running >= this.perKey) await new Promise<void>((resolve) => state.waiting.push(resolve));
    else state.running++;
    if (this.running >= this.total) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    const started = performance.now();
    state.started.push(started);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      state.started.splice(state.started.indexOf(started), 1);
      // An exponentially weighted average of the attempt durations of the key.
      const took = performance.now() - started;
      this.durations.set(key, 0.7 * (this.durations.get(key) ?? took) + 0.3 * took);
      const nextOverall = this.waiting.shift();
      if (nextOverall) nextOverall();
      else this.running--;
      const nextOfKey = state.waiting.shift();
      if (nextOfKey) nextOfKey();
      else if (--state.running === 0) this.keys.delete(key);
    };
  }

  /** Runs `attempt` in a slot of `key`. */
  async run<T>(key: string, attempt: () => Promise<T>): Promise<T> {
    const release = await this.acquire(key);
    try {
      return await attempt();
    } finally {
      release();
    }
  }

  /** How long a job of a busy `key` waits before it is offered again (with jitter). */
  backoffMs(key: string): number {
    const oldest = this.keys.get(key)?.started[0];
    const runningFor = oldest === undefined ? 0 : performance.now() - oldest;
    const typical = Math.min(this.maxBackoffMs, Math.max(100, this.durations.get(key) ?? 100, runningFor));
    return Math.round(typical * (1 + Math.random() / 2));
  }

  /** Attempts running now (metrics, shutdown). */
  size(): number {
    return this.running;
  }
}

interface KeyState {
  /** Slots of the key taken (by attempts running, or about to wait for an overall slot). */
  running: number;
  waiting: Array<() => void>;
  /** When each running attempt of the key started, oldest first. */
  started: number[];
}
