import { create, type MessageShape, toJson } from "@bufbuild/protobuf";
import { Code, type ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { naming } from "@funil/config";
import { ListInteractionsResponseSchema, SERVICES } from "@funil/contracts";
import { migrate, openDatabase, type Sql } from "@funil/db";
import { describeError, encodedBytesOf, errorInterceptor } from "@funil/rpc";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InteractionRecord, ingestItemOf } from "../ingest.js";
import { migrations, timelineDeps } from "../server.js";
import { interactionService } from "./interactions.js";
import { routes, type TimelineDeps } from "./routes.js";
import { interactionToProto } from "./wire.js";

/** timeline's handlers in-process on the real test database (docs/architecture.md §A service, room by room). */
const names = naming(`${process.env.FUNIL_TEST_ENV}_handlers`);
let sql: Sql;
let deps: TimelineDeps;
let summaries: ReturnType<typeof createClient<typeof SERVICES.timeline.summaries>>;
let interactions: ReturnType<typeof createClient<typeof SERVICES.timeline.interactions>>;

beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    names.database("timeline"),
    { max: 2 },
  );
  await migrate(sql, migrations);
  deps = timelineDeps(sql);
  const transport = createRouterTransport(routes(deps), {
    router: { interceptors: [errorInterceptor(pino({ level: "silent" }))] },
  });
  summaries = createClient(SERVICES.timeline.summaries, transport);
  interactions = createClient(SERVICES.timeline.interactions, transport);
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

let n = 0;
const ws = () => `ws_t${Date.now()}_${++n}`;
const failure = (err: unknown) => ({ grpc: (err as ConnectError).code, ...describeError(err) });
const caught = (p: Promise<unknown>) => p.then(() => undefined, failure);

function touch(workspaceId: string, contactId: string, at: string, rowId = `r${++n}`): InteractionRecord {
  const item = ingestItemOf("ingest.call", {
    workspaceId,
    rowId,
    contactId,
    direction: "outbound",
    userId: "u1",
    startedAt: at,
    durationSec: 1,
    status: "answered",
  });
  if (item.kind !== "interaction") throw new Error("not an interaction");
  return item.interaction;
}

describe("SummaryService (docs/api/contacts.md §GET /contacts/{id}; docs/api/deals.md §GET /opportunities/{id})", () => {
  it("a deal's touches count from its creation: the summary, or one probe when the window starts mid-history", async () => {
    const w = ws();
    for (const at of ["2026-01-01T00:00:00Z", "2026-01-05T00:00:00Z", "2026-01-09T00:00:00Z"])
      await deps.interactions.add(touch(w, "c1", at));
    const since = (s: string) =>
      summaries.getDealSummary({ workspaceId: w, opportunityId: "d1", contactId: "c1", since: s });
    expect((await since("2025-12-01T00:00:00Z")).touches).toMatchObject({
      firstHumanTouchAt: "2026-01-01T00:00:00.000Z",
      lastHumanTouchAt: "2026-01-09T00:00:00.000Z",
    });
    expect((await since("2026-01-02T00:00:00Z")).touches).toMatchObject({
      firstHumanTouchAt: "2026-01-05T00:00:00.000Z",
      lastHumanTouchAt: "2026-01-09T00:00:00.000Z",
    });
    const none = await since("2026-01-10T00:00:00Z");
    expect(none.touches?.firstHumanTouchAt).toBeUndefined();
    expect(none.touches?.lastHumanTouchAt).toBeUndefined();
  });

  it("a deal the timeline has not heard of yet says so, instead of inventing no touches", async () => {
    const w = ws();
    const res = await summaries.getDealSummary({ workspaceId: w, opportunityId: "d-unknown" });
    expect(res.dealKnown).toBe(false);
    expect(res.touches).toBeUndefined();
    await deps.summaries.record({
      deal: { workspaceId: w, id: "d2", contactId: "c2", createdAt: new Date("2026-01-01Z") },
      activity: {
        eventId: `evt_${w}`,
        workspaceId: w,
        opportunityId: "d2",
        type: "opportunity.updated",
        targetId: "d2",
        at: new Date("2026-01-03Z"),
      },
    });
    expect(await summaries.getDealSummary({ workspaceId: w, opportunityId: "d2" })).toMatchObject({
      dealKnown: true,
      lastActivityAt: "2026-01-03T00:00:00.000Z",
    });
  });

  it("bad ids are validation_failed (InvalidArgument), as over HTTP", async () => {
    expect(await caught(summaries.getContactSummary({ workspaceId: ws(), contactId: "" }))).toMatchObject({
      grpc: Code.InvalidArgument,
      code: "validation_failed",
    });
    expect(
      await caught(summaries.getDealSummary({ workspaceId: ws(), opportunityId: "d", since: "soon" })),
    ).toMatchObject({
      grpc: Code.InvalidArgument,
      details: expect.arrayContaining([expect.objectContaining({ path: "path.since" })]),
    });
  });
});

describe("InteractionService (docs/api/interactions.md §GET /interactions)", () => {
  it("limit 0 is the default (100); limits outside 1..500 and bad channels are InvalidArgument", async () => {
    const w = ws();
    for (let i = 0; i < 101; i++)
      await deps.interactions.add(touch(w, "c1", new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString()));
    const page = await interactions.listInteractions({ workspaceId: w });
    expect(page.data).toHaveLength(100);
    expect(page.nextCursor).toBeTruthy();
    for (const bad of [{ limit: 501 }, { limit: -1 }, { channel: "sms" }, { actor: "robot" }])
      expect(await caught(interactions.listInteractions({ workspaceId: w, ...bad }))).toMatchObject({
        grpc: Code.InvalidArgument,
        code: "validation_failed",
      });
  });
});

describe("interaction pages written from raw rows (packages/rpc row-pages.ts)", () => {
  it("GET /interactions: each page is the object path's page, written as bytes, its cursor as the object path's", async () => {
    const w = ws();
    for (let i = 0; i < 5; i++) {
      // One instant for all, ids beyond ASCII: the pages' order, and their cursors, rest on the id.
      const t = touch(w, `c${i % 2}`, "2026-01-02T00:00:00.000Z", `ação ${i} 🙂`);
      await deps.interactions.add({ ...t, durationSec: i, preview: i % 2 ? `"olá", {${i}} \\ 🙂` : null });
    }
    const impl = interactionService(deps);
    const pageOf = async (cursor?: string) => {
      const page = await impl.listInteractions({ workspaceId: w, limit: 2, cursor } as never, {} as never);
      expect(encodedBytesOf(page)).toBeDefined();
      return page as MessageShape<typeof ListInteractionsResponseSchema>;
    };
    const pages = [await pageOf()];
    while (pages.at(-1)!.nextCursor) pages.push(await pageOf(pages.at(-1)!.nextCursor));
    expect(pages).toHaveLength(3);
    const objects = (await deps.interactions.list(w, {}, 10)).map(interactionToProto);
    const schema = ListInteractionsResponseSchema;
    expect(toJson(schema, create(schema, { data: pages.flatMap((p) => p.data) }))).toEqual(
      toJson(schema, create(schema, { data: objects })),
    );
  });
});
