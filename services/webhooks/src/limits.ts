/**
 * How many attempts run at once (docs/api/webhooks.md §Retries: one slow or dead receiver never
 * holds up the others): at most `total` overall, at most `perKey` for one
 * subscription. An attempt waits first for a slot of its subscription, then
 * for one of the overall slots, each in arrival order: a subscription whose
 * receiver hangs holds at most `perKey` of the overall slots, never more.
 *
 * backoffMs(key) says how long a job of a subscription that has no room
 * (JobQueues) waits before JetStream offers it again: about as long as that
 * subscription's attempts have been taking, or as long as its oldest running
 * attempt has been running if that is longer, so a receiver that hangs until
 * the timeout is asked again when a slot may be free, and a fast one at once.
 */
export class InFlight {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly keys = new Map<string, KeyState>();
  private readonly durations = new Map<string, number>();
  constructor(
    readonly total: number,
    readonly perKey: number,
    private readonly maxBackoffMs: number,
  ) {}

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

/**
 * The jobs a process holds, per subscription: `running` of them at once
 * (their deliveries share the subscription's slots), up to `waiting` more
 * queued here in arrival order, and the rest handed back to JetStream (full).
 * A job that waits here costs its message only: a receiver that hangs does
 * not make its jobs bounce off the bus, nor hold the others'. room() waits
 * while `total` jobs are held over all subscriptions, so what a process
 * holds stays bounded however many subscriptions there are.
 */
export class JobQueues<J> {
  private readonly running = new Map<string, number>();
  private readonly queued = new Map<string, J[]>();
  private held = 0;
  private readonly roomWaiters: Array<() => void> = [];

  constructor(
    readonly runningPerKey: number,
    readonly waitingPerKey: number,
    readonly total: number,
  ) {}

  /** Takes a job of `key`: to run now, queued behind the running ones, or refused (full). */
  offer(key: string, job: J): "run" | "queued" | "full" {
    const running = this.running.get(key) ?? 0;
    if (running < this.runningPerKey) {
      this.running.set(key, running + 1);
      this.held++;
      return "run";
    }
    const queue = this.queued.get(key);
    if ((queue?.length ?? 0) >= this.waitingPerKey) return "full";
    if (queue) queue.push(job);
    else this.queued.set(key, [job]);
    this.held++;
    return "queued";
  }

  /** A running job of `key` is over: answers the next one of `key` to run, if one waits. */
  done(key: string): J | undefined {
    this.held--;
    if (this.roomWaiters.length > 0) for (const wake of this.roomWaiters.splice(0)) wake();
    const queue = this.queued.get(key);
    const next = queue?.shift();
    if (queue && queue.length === 0) this.queued.delete(key);
    if (next !== undefined) return next;
    const running = (this.running.get(key) ?? 1) - 1;
    if (running <= 0) this.running.delete(key);
    else this.running.set(key, running);
    return undefined;
  }

  /** The jobs waiting their turn (their messages are told to JetStream as still worked on). */
  *waiting(): Iterable<J> {
    for (const queue of this.queued.values()) yield* queue;
  }

  /** Empties every queue (the process stops): the jobs that waited, to hand back. */
  takeWaiting(): J[] {
    const all = [...this.waiting()];
    this.held -= all.length;
    this.queued.clear();
    return all;
  }

  /** Resolves once fewer than `total` jobs are held. */
  async room(): Promise<void> {
    while (this.held >= this.total) await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
  }

  /** Jobs held, running or waiting. */
  size(): number {
    return this.held;
  }
}
