/**
 * How many attempts run at once (issue 11: one slow or dead receiver never
 * holds up the others): at most `total` overall, at most `perKey` for one
 * subscription. A job whose subscription is at its bound is not queued behind
 * it but handed back to JetStream for `backoffMs(key)`: about as long as that
 * subscription's attempts have been taking, or as long as its oldest running
 * attempt has been running if that is longer, so a receiver that hangs until
 * the timeout is asked again when a slot may be free (its jobs do not bounce
 * every 100 ms while its first attempts hang), and a fast one at once.
 */
export class InFlight {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly perKeyCount = new Map<string, number>();
  private readonly durations = new Map<string, number>();
  /** When each running attempt of a key started, oldest first. */
  private readonly started = new Map<string, number[]>();

  constructor(
    readonly total: number,
    readonly perKey: number,
    private readonly maxBackoffMs: number,
  ) {}

  /** Whether `key` has a free slot of its own. */
  hasRoom(key: string): boolean {
    return (this.perKeyCount.get(key) ?? 0) < this.perKey;
  }

  /** Waits for an overall slot, then holds one of `key`'s; release() gives both back. */
  async acquire(key: string): Promise<() => void> {
    if (this.running >= this.total) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    this.perKeyCount.set(key, (this.perKeyCount.get(key) ?? 0) + 1);
    const started = performance.now();
    const starts = this.started.get(key);
    if (starts) starts.push(started);
    else this.started.set(key, [started]);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.perKeyCount.get(key) ?? 1) - 1;
      if (left === 0) this.perKeyCount.delete(key);
      else this.perKeyCount.set(key, left);
      const running = this.started.get(key);
      if (running) {
        running.splice(running.indexOf(started), 1);
        if (running.length === 0) this.started.delete(key);
      }
      // An exponentially weighted average of the attempt durations of the key.
      const took = performance.now() - started;
      this.durations.set(key, 0.7 * (this.durations.get(key) ?? took) + 0.3 * took);
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    };
  }

  /** How long a job of a full `key` waits before it is offered again (with jitter). */
  backoffMs(key: string): number {
    const oldest = this.started.get(key)?.[0];
    const runningFor = oldest === undefined ? 0 : performance.now() - oldest;
    const typical = Math.min(this.maxBackoffMs, Math.max(100, this.durations.get(key) ?? 100, runningFor));
    return Math.round(typical * (1 + Math.random() / 2));
  }

  /** Attempts running now (metrics, shutdown). */
  size(): number {
    return this.running;
  }
}
