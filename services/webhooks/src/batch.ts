/**
 * Gathers the calls made in the same turn of the event loop, or within
 * `waitMs` of the first of them (up to `max`), into one call of `run` with
 * all their items: many attempts claim, or record, their deliveries in one
 * statement instead of one each. `run` answers item by item, in order; when
 * it throws, every call of that batch rejects with its error.
 */
export function batcher<T, R>(
  run: (items: T[]) => Promise<R[]>,
  max = 256,
  waitMs = 0,
): (item: T) => Promise<R> {
  let waiting: Array<{ item: T; resolve: (r: R) => void; reject: (err: unknown) => void }> = [];
  let scheduled = false;

  function flush() {
    scheduled = false;
    const batch = waiting;
    waiting = [];
    if (batch.length === 0) return;
    run(batch.map((w) => w.item)).then(
      (results) => {
        for (let i = 0; i < batch.length; i++) batch[i]!.resolve(results[i]!);
      },
      (err: unknown) => {
        for (const w of batch) w.reject(err);
      },
    );
  }

  return (item) =>
    new Promise<R>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      if (waiting.length >= max) flush();
      else if (!scheduled) {
        scheduled = true;
        if (waitMs > 0) setTimeout(flush, waitMs);
        else setImmediate(flush);
      }
    });
}
