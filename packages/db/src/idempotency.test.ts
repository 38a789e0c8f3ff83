import { DomainError, fail } from "@funil/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Sql } from "./client.js";
import {
  canonicalJson,
  deleteExpiredIdempotencyKeys,
  forgetAnswers,
  rememberedAnswer,
  requestFingerprint,
  withIdempotency,
} from "./idempotency.js";
import { migrate } from "./migrate.js";

let sql: Sql;
beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    `funil_${process.env.FUNIL_TEST_ENV}_deals_db`,
  );
  await migrate(sql);
  await sql`create table if not exists things (id serial primary key, note text)`;
});
afterAll(async () => {
  await sql.end({ timeout: 5 });
});

let n = 0;
const req = (fingerprint = "fp") => ({ workspaceId: "ws_1", key: `k${Date.now()}-${++n}`, fingerprint });
const opts = (now = new Date()) => ({ now, encode: (id: number) => ({ id }) });
const insert = (note: string) => async (tx: Parameters<Parameters<typeof withIdempotency>[3]>[0]) => {
  const [row] = await tx<{ id: number }[]>`insert into things (note) values (${note}) returning id`;
  return row!.id;
};
const count = async (note: string) => (await sql`select 1 from things where note = ${note}`).length;

describe("withIdempotency (docs/api/conventions.md §Idempotency-Key)", () => {
  it("docs/api/conventions.md §Idempotency-Key: the first request runs; a repeat replays the stored response", async () => {
    const r = req();
    const first = await withIdempotency(sql, r, opts(), insert(r.key));
    expect(first).toMatchObject({ replayed: false });
    const again = await withIdempotency(sql, r, opts(), insert(r.key));
    expect(again).toEqual({ replayed: true, ok: { id: (first as { value: number }).value } });
    expect(await count(r.key)).toBe(1);
  });

  it("docs/api/conventions.md §Idempotency-Key: what a key answers is read outside a transaction: nothing while free, then the replay, the reuse, the remembered failure", async () => {
    const r = req("a");
    expect(await rememberedAnswer(sql, r, opts())).toBeUndefined();
    const first = await withIdempotency(sql, r, opts(), insert(r.key));
    expect(await rememberedAnswer(sql, r, opts())).toEqual({
      replayed: true,
      ok: { id: (first as { value: number }).value },
    });
    await expect(rememberedAnswer(sql, { ...r, fingerprint: "b" }, opts())).rejects.toMatchObject({
      code: "idempotency_key_reused",
    });
    // Past the retention the key is free again.
    expect(await rememberedAnswer(sql, r, opts(new Date(Date.now() + 25 * 3600_000)))).toBeUndefined();
    const failed = req();
    await withIdempotency(sql, failed, opts(), async () => {
      throw fail("invalid_reference", "no such contact");
    }).catch(() => {});
    await expect(rememberedAnswer(sql, failed, opts())).rejects.toMatchObject({
      code: "invalid_reference",
      replayed: true,
    });
  });

  it("docs/api/conventions.md §Idempotency-Key: another fingerprint under the same key → idempotency_key_reused", async () => {
    const r = req("a");
    await withIdempotency(sql, r, opts(), insert(r.key));
    await expect(
      withIdempotency(sql, { ...r, fingerprint: "b" }, opts(), insert(r.key)),
    ).rejects.toMatchObject({
      code: "idempotency_key_reused",
    });
  });

  it("docs/api/conventions.md §Idempotency-Key: while the first is in flight, a repeat is idempotency_key_in_use at once (no waiting)", async () => {
    const r = req();
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const first = withIdempotency(sql, r, opts(), async (tx) => {
      started();
      await gate;
      return insert(r.key)(tx);
    });
    await running;
    const t0 = Date.now();
    const err = await withIdempotency(sql, r, opts(), insert(r.key)).catch((e) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect(err.code).toBe("idempotency_key_in_use");
    expect(Date.now() - t0).toBeLessThan(1000);
    release();
    await first;
    expect(await count(r.key)).toBe(1);
  });

  it("docs/api/conventions.md §Idempotency-Key: a remembered failure (a 4xx) rolls the work back, is stored, and is thrown again, marked replayed", async () => {
    const r = req();
    const failing = async (tx: Parameters<ReturnType<typeof insert>>[0]) => {
      await insert(r.key)(tx);
      throw fail("invalid_reference", "no such pipeline", [{ path: "pipelineId", message: "unknown" }]);
    };
    const first = await withIdempotency(sql, r, opts(), failing).catch((e) => e);
    expect(first).toMatchObject({ code: "invalid_reference", replayed: false });
    expect(await count(r.key)).toBe(0);
    const again = await withIdempotency(sql, r, opts(), insert(r.key)).catch((e) => e);
    expect(again).toBeInstanceOf(DomainError);
    expect(again).toMatchObject({
      code: "invalid_reference",
      message: "no such pipeline",
      details: [{ path: "pipelineId", message: "unknown" }],
      replayed: true,
    });
    expect(await count(r.key)).toBe(0);
  });

  it("docs/api/conventions.md §Idempotency-Key: a failure that is not remembered (5xx, validation_failed) keeps nothing: the retry runs", async () => {
    for (const failure of [
      new Error("boom"),
      fail("unavailable", "down"),
      fail("validation_failed", "bad"),
    ]) {
      const r = req();
      await expect(
        withIdempotency(sql, r, opts(), async () => {
          throw failure;
        }),
      ).rejects.toBe(failure);
      const retry = await withIdempotency(sql, r, opts(), insert(r.key));
      expect(retry.replayed).toBe(false);
      expect(await count(r.key)).toBe(1);
    }
  });

  it("docs/api/conventions.md §Idempotency-Key: after the 24 h retention the key is free again; the cleanup deletes expired keys", async () => {
    const r = req("old");
    const then = new Date(Date.now() - 25 * 3600_000);
    await withIdempotency(sql, r, opts(then), insert(r.key));
    const fresh = await withIdempotency(sql, { ...r, fingerprint: "new" }, opts(), insert(r.key));
    expect(fresh.replayed).toBe(false);
    expect(await count(r.key)).toBe(2);
    const r2 = req();
    await withIdempotency(sql, r2, opts(then), insert(r2.key));
    expect(await deleteExpiredIdempotencyKeys(sql, new Date())).toBeGreaterThanOrEqual(1);
    const [left] = await sql`select count(*)::int as n from idempotency_keys where key = ${r2.key}`;
    expect(left!.n).toBe(0);
  });

  it("docs/api/conventions.md §Idempotency-Key: ten concurrent first requests run the work once", async () => {
    const r = req();
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => withIdempotency(sql, r, opts(), insert(r.key))),
    );
    expect(await count(r.key)).toBe(1);
    for (const x of results)
      if (x.status === "rejected") expect((x.reason as DomainError).code).toBe("idempotency_key_in_use");
  });
});

describe("forgetAnswers (docs/api/contacts.md §POST /contacts/{id}/erase)", () => {
  it("docs/api/contacts.md §POST /contacts/{id}/erase: a remembered answer that contains the erased record replays the given failure; others and other workspaces are untouched", async () => {
    const about = { ...req(), workspaceId: `ws_forget_${Date.now()}` };
    const other = { ...req(), workspaceId: about.workspaceId };
    const elsewhere = { ...req(), workspaceId: `ws_elsewhere_${Date.now()}` };
    const encode = (v: unknown) => v;
    const remember = (r: typeof about, ok: unknown) =>
      withIdempotency(sql, r, { now: new Date(), encode }, async () => ok);
    await remember(about, { contact: { id: "ct_1", name: "Maria" } });
    await remember(other, { contact: { id: "ct_2", name: "Bia" } });
    await remember(elsewhere, { contact: { id: "ct_1", name: "Maria" } });
    const forgotten = await sql.begin((tx) =>
      forgetAnswers(tx, about.workspaceId, [{ ok: { contact: { id: "ct_1" } } }], {
        code: "not_found",
        message: "contact not found",
      }),
    );
    expect(forgotten).toBe(1);
    const replay = await withIdempotency(
      sql,
      about,
      { now: new Date(), encode },
      async () => "ran again",
    ).catch((e: DomainError) => ({ code: e.code, replayed: e.replayed }));
    expect(replay).toEqual({ code: "not_found", replayed: true });
    expect(await rememberedAnswer(sql, other, { now: new Date() })).toEqual({
      replayed: true,
      ok: { contact: { id: "ct_2", name: "Bia" } },
    });
    expect(await rememberedAnswer(sql, elsewhere, { now: new Date() })).toMatchObject({
      ok: { contact: { name: "Maria" } },
    });
  });
});

describe("request fingerprint", () => {
  it("docs/api/conventions.md §Idempotency-Key: canonical JSON sorts keys at every depth; the operation and the body both count", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}',
    );
    const fp = requestFingerprint("CreateOpportunity", { a: 1, b: 2 });
    expect(requestFingerprint("CreateOpportunity", { b: 2, a: 1 })).toBe(fp);
    expect(requestFingerprint("CreateAppointment", { a: 1, b: 2 })).not.toBe(fp);
    expect(requestFingerprint("CreateOpportunity", { a: 1, b: 3 })).not.toBe(fp);
    expect(fp).toMatch(/^[0-9a-f]{64}$/);
  });
});
