import { create } from "@bufbuild/protobuf";
import {
  ListOpportunitiesResponseSchema,
  type Opportunity,
  OpportunitySchema,
  UtmSchema,
} from "@funil/contracts";
import { openDatabase, type Sql } from "@funil/db";
import { isoString } from "@funil/schemas";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { codecOf, Writer } from "./codec.js";
import {
  encodedBytesOf,
  encodedMessage,
  type RawRows,
  type RowList,
  rowListPage,
  rowPageWriter,
  writeIsoFromPostgres,
  writeTextArray,
} from "./row-pages.js";

/**
 * Row pages (row-pages.ts) against the object path they stand in for: the same rows of a real
 * PostgreSQL table read as objects by postgres.js and mapped to messages as the services' wire
 * mappings do (NULL → unset, timestamps through isoString, jsonb as objects), and read raw and
 * written by rowPageWriter, decode to the same reply.
 */
let sql: Sql;
beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    `funil_${process.env.FUNIL_TEST_ENV}_rpc_rows`,
    { max: 1 },
  );
  await sql`drop table if exists row_deals`;
  await sql`create table row_deals (
    id text primary key, title text not null, pipeline_id uuid not null, stage_id text not null,
    contact_id text not null, status text not null, value_cents bigint not null, currency text not null,
    owner_user_id text, temperature text, tags text[] not null, loss_reason text,
    expected_close_at timestamptz, won_at timestamptz, lost_at timestamptz, custom_fields jsonb,
    source text, utm jsonb not null, origin text, url text, stage_changed_at timestamptz not null,
    created_at timestamptz not null, updated_at timestamptz not null, workspace_id text not null)`;
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

const COLUMNS = `id, workspace_id, title, pipeline_id, stage_id, contact_id, status, value_cents::text as value_cents,
  currency, owner_user_id, temperature, tags, loss_reason, expected_close_at, won_at, lost_at, custom_fields,
  source, utm, origin, url, stage_changed_at, created_at, updated_at`;

type Row = Record<string, unknown>;

/** What the object path makes of a row (crm's dealWire, field by field). */
const opportunityOf = (r: Row): Opportunity => {
  const absent = (v: unknown) => (v === null ? undefined : v);
  return create(OpportunitySchema, {
    id: r.id as string,
    title: r.title as string,
    pipelineId: r.pipelineId as string,
    stageId: r.stageId as string,
    contactId: r.contactId as string,
    status: r.status as string,
    valueCents: BigInt(r.valueCents as string),
    currency: r.currency as string,
    ownerUserId: absent(r.ownerUserId) as string | undefined,
    temperature: absent(r.temperature) as string | undefined,
    tags: r.tags as string[],
    lossReason: absent(r.lossReason) as string | undefined,
    expectedCloseAt: isoString(r.expectedCloseAt as Date | null),
    wonAt: isoString(r.wonAt as Date | null),
    lostAt: isoString(r.lostAt as Date | null),
    customFields: (r.customFields ?? undefined) as Opportunity["customFields"],
    createdAt: isoString(r.createdAt as Date),
    updatedAt: isoString(r.updatedAt as Date),
    source: absent(r.source) as string | undefined,
    utm: create(UtmSchema, r.utm as object),
    origin: absent(r.origin) as string | undefined,
    stageChangedAt: isoString(r.stageChangedAt as Date),
    url: absent(r.url) as string | undefined,
  });
};

const writer = rowPageWriter(ListOpportunitiesResponseSchema);
const codec = codecOf(ListOpportunitiesResponseSchema);

/** The page both ways, each through the codec: [object path, row page]. */
async function bothWays(workspaceId: string, nextCursor?: string) {
  const objects = await sql.unsafe(`select ${COLUMNS} from row_deals where workspace_id = $1 order by id`, [
    workspaceId,
  ]);
  const raw = (await sql
    .unsafe(`select ${COLUMNS} from row_deals where workspace_id = $1 order by id`, [workspaceId])
    .raw()) as unknown as RawRows;
  const bytes = writer.write(raw, raw.columns, nextCursor);
  const expected = codec.decode(
    codec.encode(create(ListOpportunitiesResponseSchema, { data: objects.map(opportunityOf), nextCursor })),
  );
  return { expected, actual: bytes && codec.decode(bytes) };
}

// PostgreSQL text holds no NUL; jsonb holds no NUL either, nor a number JSON cannot write.
const text = fc.string({ unit: "grapheme", maxLength: 40 }).filter((s) => !s.includes("\u0000"));
const long = fc
  .string({ unit: "grapheme", minLength: 100, maxLength: 200 })
  .filter((s) => !s.includes("\u0000"));
const nastyTag = fc.oneof(
  text,
  fc.constantFrom("NULL", "null", "", " ", "a,b", "{x}", '"q"', "back\\slash", "ç ã"),
);
const json = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    text,
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(text, tie("value"), { maxKeys: 3 }),
  ),
})).value;
const instant = fc.date({
  min: new Date("0001-01-01T00:00:00Z"),
  max: new Date("9999-12-31T23:59:59.999Z"),
  noInvalidDate: true,
});
const utm = fc.record(
  { source: text, medium: text, campaign: text, term: text, content: text },
  { requiredKeys: [] },
);
const deal = fc.record({
  title: fc.oneof(text, long),
  stageId: text,
  status: fc.constantFrom("open", "won", "lost", ""),
  valueCents: fc.oneof(fc.constant(0), fc.maxSafeInteger(), fc.integer({ min: -1000, max: 1000 })),
  currency: text,
  ownerUserId: fc.option(text),
  temperature: fc.option(text),
  tags: fc.array(nastyTag, { maxLength: 5 }),
  lossReason: fc.option(long),
  expectedCloseAt: fc.option(instant),
  wonAt: fc.option(instant),
  lostAt: fc.option(instant),
  customFields: fc.option(fc.dictionary(text, json, { maxKeys: 4 })),
  source: fc.option(text),
  utm,
  origin: fc.option(text),
  url: fc.option(long),
  stageChangedAt: instant,
  createdAt: instant,
  updatedAt: instant,
});

let n = 0;
/** Inserts the deals; their ids, in order. */
async function insert(workspaceId: string, deals: Row[]) {
  const ids: string[] = [];
  for (const d of deals) {
    ids.push(`opp_${String(++n).padStart(8, "0")}`);
    await sql`insert into row_deals ${sql({
      ...d,
      id: ids.at(-1),
      workspaceId,
      pipelineId: "3f1c2a8e-0a5b-4c1d-9e2f-6a7b8c9d0e1f",
      contactId: `ct_${n}`,
      customFields: d.customFields === null ? null : sql.json(d.customFields as never),
      utm: sql.json(d.utm as never),
    } as never)}`;
  }
  return ids;
}

describe("row pages (row-pages.ts): a page written from raw rows is the page of the object path", () => {
  it("any deals (unicode, quotes and braces in tags, NULLs, long strings, any year, jsonb objects)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(deal, { maxLength: 4 }), fc.option(text), async (deals, cursor) => {
        const workspaceId = `ws_rows_${++n}`;
        await insert(workspaceId, deals as never);
        const { expected, actual } = await bothWays(workspaceId, cursor ?? undefined);
        expect(actual).toEqual(expected);
        // And both are the instants that were stored, years 1 to 99 included.
        expect(actual!.data.map((o) => [o.createdAt, o.wonAt])).toEqual(
          deals.map((d) => [d.createdAt.toISOString(), d.wonAt?.toISOString()]),
        );
      }),
      { numRuns: 100 },
    );
  });

  it("timestamps in another time zone and with microseconds take the slow way to the same ISO string", async () => {
    const workspaceId = `ws_rows_${++n}`;
    await insert(workspaceId, [...fc.sample(deal, { numRuns: 3, seed: 7 }).map((d) => d as never)]);
    await sql`update row_deals set created_at = '2026-11-25 10:00:00.123456+00', won_at = '0999-01-02 03:04:05+00'
      where workspace_id = ${workspaceId}`;
    const utc = await bothWays(workspaceId);
    expect(utc.actual).toEqual(utc.expected);
    await sql`set time zone 'America/Sao_Paulo'`;
    try {
      const elsewhere = await bothWays(workspaceId);
      expect(elsewhere.actual).toEqual(elsewhere.expected);
      expect(elsewhere.actual).toEqual(utc.actual);
    } finally {
      await sql`set time zone 'UTC'`;
    }
  });

  it("a NULL tag or a custom_fields that is no object is left to the object path (undefined)", async () => {
    for (const change of [
      sql`update row_deals set tags = array['a', null] where workspace_id = ${"ws_rows_null"}`,
      sql`update row_deals set custom_fields = '[1]' where workspace_id = ${"ws_rows_null"}`,
    ]) {
      await sql`delete from row_deals where workspace_id = ${"ws_rows_null"}`;
      await insert("ws_rows_null", fc.sample(deal, { numRuns: 2, seed: 3 }) as never);
      await change;
      const raw = (await sql
        .unsafe(`select ${COLUMNS} from row_deals where workspace_id = 'ws_rows_null'`)
        .raw()) as unknown as RawRows;
      expect(writer.write(raw, raw.columns, undefined)).toBeUndefined();
    }
  });

  it("a statement without a column for each field is an error at its first page, naming the field", async () => {
    const raw = (await sql.unsafe(`select id, title from row_deals limit 1`).raw()) as unknown as RawRows;
    expect(() => writer.write(raw, raw.columns, undefined)).toThrow(/pipelineId has no column/);
  });
});

describe("rowListPage", () => {
  it("the same page asked together is read once and answered to each; another page, or one asked later, is read again and sees what was written", async () => {
    const workspaceId = `ws_rows_${++n}`;
    await insert(workspaceId, fc.sample(deal, 3) as never);
    const read: number[] = [];
    const spec = {
      list: "row-deals",
      defaultLimit: 50,
      sortKey: (r: Opportunity) => new Date(r.createdAt),
      sortColumn: () => "createdAt",
      response: ListOpportunitiesResponseSchema,
      toMessage: (r: Opportunity) => r,
      statement: (ws: string, _filters: unknown, take: number) => {
        read.push(take);
        return sql.unsafe(
          `select ${COLUMNS} from row_deals where workspace_id = $1 order by created_at, id limit $2`,
          [ws, take],
        );
      },
    } as unknown as RowList<never, unknown, Opportunity, Opportunity>;
    const page = (limit: number) => rowListPage(spec, workspaceId, { limit } as never);
    const [a, b, c, other] = await Promise.all([page(2), page(2), page(2), page(10)]);
    expect(read).toEqual([3, 11]);
    expect(b).toBe(a);
    expect(c).toBe(a);
    expect(codecOf(ListOpportunitiesResponseSchema).decode(encodedBytesOf(a)!).data).toHaveLength(2);
    expect(other!.data).toHaveLength(3);
    await insert(workspaceId, fc.sample(deal, 1) as never);
    expect((await page(10)).data).toHaveLength(4);
    expect(read).toEqual([3, 11, 11]);
  });
});

describe("PostgreSQL's text forms", () => {
  const written = (f: (w: Writer) => boolean) => {
    const w = new Writer();
    return f(w) ? Buffer.from(w.finish()) : undefined;
  };
  const iso = (text: string) => {
    const out = written((w) => writeIsoFromPostgres(w, Buffer.from(text)));
    return out?.subarray(1).toString();
  };

  it("a UTC timestamp with 0 to 3 fraction digits is Date#toISOString's form", () => {
    expect(iso("2026-11-25 10:00:00+00")).toBe("2026-11-25T10:00:00.000Z");
    expect(iso("2026-11-25 10:00:00.1+00")).toBe("2026-11-25T10:00:00.100Z");
    expect(iso("2026-11-25 10:00:00.12+00")).toBe("2026-11-25T10:00:00.120Z");
    expect(iso("0001-01-01 00:00:00.999+00")).toBe("0001-01-01T00:00:00.999Z");
  });

  it("any other form is not written (the caller formats it the slow way)", () => {
    for (const other of [
      "2026-11-25 10:00:00.123456+00",
      "2026-11-25 10:00:00-03",
      "2026-11-25 10:00:00+05:30",
      "0001-12-31 23:59:59+00 BC",
      "10000-01-01 00:00:00+00",
      "infinity",
      "2026-11-25T10:00:00+00",
      "2026-11-25 10:00:00.+00",
    ])
      expect(iso(other)).toBeUndefined();
  });

  it("a text[] literal becomes one string per element, quotes and backslashes undone", () => {
    const elements = (literal: string) => {
      const out = written((w) => writeTextArray(w, 10, Buffer.from(literal)));
      if (!out) return undefined;
      const list: string[] = [];
      for (let p = 0; p < out.length; ) {
        expect(out[p]).toBe(10);
        let len = 0;
        let shift = 0;
        p++;
        for (;;) {
          const b = out[p++]!;
          len |= (b & 127) << shift;
          shift += 7;
          if (b < 128) break;
        }
        list.push(out.subarray(p, p + len).toString());
        p += len;
      }
      return list;
    };
    expect(elements("{}")).toEqual([]);
    expect(elements('{a,"b c","d\\"e","f\\\\g","",NULLX,"NULL"}')).toEqual([
      "a",
      "b c",
      'd"e',
      "f\\g",
      "",
      "NULLX",
      "NULL",
    ]);
    expect(elements("{a,NULL}")).toBeUndefined();
    expect(elements("{a,null}")).toBeUndefined();
    expect(elements("{{a},{b}}")).toBeUndefined();
  });
});

describe("encodedMessage", () => {
  it("reads as the message its bytes hold", () => {
    const message = create(ListOpportunitiesResponseSchema, {
      data: [create(OpportunitySchema, { id: "opp_1", title: "Deal", valueCents: 5n, tags: ["a"] })],
      nextCursor: "next",
    });
    const bytes = codec.encode(message);
    const encoded = encodedMessage(ListOpportunitiesResponseSchema, bytes);
    expect(encoded.nextCursor).toBe("next");
    expect(encoded.data[0]).toMatchObject({ id: "opp_1", title: "Deal", valueCents: 5n, tags: ["a"] });
    expect(codec.decode(codec.encode(encoded))).toEqual(codec.decode(bytes));
  });
});
