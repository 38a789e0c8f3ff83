import { beforeAll, describe, expect, it } from "vitest";
import { keyFor, newWorkspace, type Workspace } from "../helpers.js";
import { contact, deal, pipeline, sleep } from "./crm-fixtures.js";

let ws: Workspace;
let pl: Awaited<ReturnType<typeof pipeline>>;
let from: string;
let to: string;

const patch = (id: string, body: Record<string, unknown>) => ws.call("PATCH", `/opportunities/${id}`, body);
/** Waits so that the next timestamp is strictly later than the last one taken. */
const tick = () => sleep(5);
const now = async () => {
  await tick();
  const t = new Date().toISOString();
  await tick();
  return t;
};

/*
 * The timeline, with hand-computed figures below:
 *   before the range: A1 (100, stage 0), A2 (200, stage 0), A3 (50, stage 1)
 *   [from
 *     B1 (300, stage 0), B2 (400, stage 1), B3 (500, stage 0), B4 (600, stage 2, trashed in range)
 *     A1 won, B1 lost, A3 won then trashed
 *   to)
 *   after the range: C1 (700) created and won, B2 won, A2 lost
 */
beforeAll(async () => {
  ws = await newWorkspace();
  pl = await pipeline(ws);
  const c = await contact(ws);
  const s = pl.stages.map((x) => x.id);
  const mk = (valueCents: number, stage: number) =>
    deal(ws, { contactId: c.id, pipelineId: pl.id, stageId: s[stage], valueCents });
  const a1 = await mk(100, 0);
  const a2 = await mk(200, 0);
  const a3 = await mk(50, 1);
  from = await now();
  await mk(300, 0).then(async (b1) => {
    await mk(400, 1).then(async (b2) => {
      const b3 = await mk(500, 0);
      const b4 = await mk(600, 2);
      expect((await ws.call("DELETE", `/opportunities/${b4.id}`)).status).toBe(204);
      expect((await patch(a1.id, { status: "won" })).status).toBe(200);
      expect((await patch(b1.id, { status: "lost", lossReason: "price" })).status).toBe(200);
      expect((await patch(a3.id, { status: "won" })).status).toBe(200);
      expect((await ws.call("DELETE", `/opportunities/${a3.id}`)).status).toBe(204);
      expect(b3.status).toBe("open");
      to = await now();
      const c1 = await mk(700, 3);
      expect((await patch(c1.id, { status: "won" })).status).toBe(200);
      expect((await patch(b2.id, { status: "won" })).status).toBe(200);
      expect((await patch(a2.id, { status: "lost" })).status).toBe(200);
    });
  });
});

const tally = (count: number, valueCents: number) => ({ count, valueCents });

describe("GET /funnel", () => {
  it("docs/api/deals.md §GET /funnel: total, byStage, byStatus count deals created in [from, to); closedInRange by wonAt/lostAt", async () => {
    const res = await ws.call("GET", `/funnel?pipelineId=${pl.id}&from=${from}&to=${to}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      from,
      to,
      pipelineId: pl.id,
      // B1 300 + B2 400 + B3 500 (B4 trashed)
      total: tally(3, 1200),
      byStage: [
        { stageId: pl.stages[0]!.id, name: "Novo", ...tally(2, 800) },
        { stageId: pl.stages[1]!.id, name: "Qualificado", ...tally(1, 400) },
        { stageId: pl.stages[2]!.id, name: "Proposta", ...tally(0, 0) },
        { stageId: pl.stages[3]!.id, name: "Fechamento", ...tally(0, 0) },
      ],
      // by current status: B3 open, B2 won (after the range, still counted by its status), B1 lost
      byStatus: { open: tally(1, 500), won: tally(1, 400), lost: tally(1, 300) },
      // A1 won in range though created before it; B1 lost in range; A3 trashed; B2, A2, C1 closed after
      closedInRange: { won: tally(1, 100), lost: tally(1, 300) },
    });
  });

  it("docs/api/deals.md §GET /funnel: without from and to everything is counted (trash excluded)", async () => {
    const res = await ws.call("GET", `/funnel?pipelineId=${pl.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      from: null,
      to: null,
      // A1 100, A2 200, B1 300, B2 400, B3 500, C1 700
      total: tally(6, 2200),
      byStage: [
        { stageId: pl.stages[0]!.id, ...tally(4, 1100) },
        { stageId: pl.stages[1]!.id, ...tally(1, 400) },
        { stageId: pl.stages[2]!.id, ...tally(0, 0) },
        { stageId: pl.stages[3]!.id, ...tally(1, 700) },
      ],
      byStatus: { open: tally(1, 500), won: tally(3, 1200), lost: tally(2, 500) },
      closedInRange: { won: tally(3, 1200), lost: tally(2, 500) },
    });
  });

  it("docs/api/deals.md §GET /funnel: an open-ended range (only from, only to)", async () => {
    const onlyFrom = await ws.call("GET", `/funnel?pipelineId=${pl.id}&from=${from}`);
    // created from `from` on: B1, B2, B3, C1; closed from `from` on: A1, B2, C1 won; B1, A2 lost
    expect(onlyFrom.body).toMatchObject({
      total: tally(4, 1900),
      byStatus: { open: tally(1, 500), won: tally(2, 1100), lost: tally(1, 300) },
      closedInRange: { won: tally(3, 1200), lost: tally(2, 500) },
    });
    const onlyTo = await ws.call("GET", `/funnel?pipelineId=${pl.id}&to=${to}`);
    // created before `to`: A1, A2, B1, B2, B3; closed before `to`: A1 won, B1 lost
    expect(onlyTo.body).toMatchObject({
      total: tally(5, 1500),
      byStatus: { open: tally(1, 500), won: tally(2, 500), lost: tally(2, 500) },
      closedInRange: { won: tally(1, 100), lost: tally(1, 300) },
    });
  });

  it("docs/api/deals.md §DELETE /opportunities/{id} and POST /opportunities/{id}/restore: a restored deal counts again", async () => {
    const c = await contact(ws);
    const d = await deal(ws, { contactId: c.id, pipelineId: pl.id, valueCents: 1 });
    const before = (await ws.call("GET", `/funnel?pipelineId=${pl.id}`)).body.total;
    await ws.call("DELETE", `/opportunities/${d.id}`);
    expect((await ws.call("GET", `/funnel?pipelineId=${pl.id}`)).body.total).toEqual({
      count: before.count - 1,
      valueCents: before.valueCents - 1,
    });
    await ws.call("POST", `/opportunities/${d.id}/restore`);
    expect((await ws.call("GET", `/funnel?pipelineId=${pl.id}`)).body.total).toEqual(before);
    await ws.call("DELETE", `/opportunities/${d.id}`);
  });

  it("docs/api/deals.md §GET /funnel: without pipelineId, every pipeline's stages in order; an empty workspace has zero rows", async () => {
    const fresh = await newWorkspace();
    const empty = await fresh.call("GET", "/funnel");
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({
      from: null,
      to: null,
      pipelineId: null,
      total: tally(0, 0),
      byStage: [],
      byStatus: { open: tally(0, 0), won: tally(0, 0), lost: tally(0, 0) },
      closedInRange: { won: tally(0, 0), lost: tally(0, 0) },
    });
    const p1 = await pipeline(fresh, ["a", "b"]);
    const p2 = await pipeline(fresh, ["c"]);
    const all = await fresh.call("GET", "/funnel");
    expect(all.body.byStage.map((s: { name: string }) => s.name)).toEqual(["a", "b", "c"]);
    expect(all.body.byStage.map((s: { stageId: string }) => s.stageId)).toEqual([
      ...p1.stages.map((s) => s.id),
      ...p2.stages.map((s) => s.id),
    ]);
  });

  it("docs/api/conventions.md §Errors: bad parameters are 400, an unknown pipeline 422, another workspace's pipeline 422", async () => {
    for (const q of ["from=yesterday", `from=${to}&to=${from}`, "nope=1", "pipelineId="]) {
      const res = await ws.call("GET", `/funnel?${q}`);
      expect(res.status, q).toBe(400);
    }
    const unknown = await ws.call("GET", "/funnel?pipelineId=pl_nope");
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.code).toBe("invalid_reference");
    const other = await newWorkspace();
    expect((await other.call("GET", `/funnel?pipelineId=${pl.id}`)).status).toBe(422);
  });

  it("docs/api/conventions.md §Scopes per route: GET /funnel needs opportunities.read", async () => {
    const k = await keyFor(ws, ["tasks.read"]);
    expect((await k.call("GET", "/funnel")).status).toBe(403);
  });
});
