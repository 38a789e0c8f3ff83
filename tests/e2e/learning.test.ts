import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { naming } from "@funil/config";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  ALL_SCOPES,
  gatewayCopy,
  gatewayUrl,
  newWorkspace,
  request,
  type Workspace,
  waitFor,
} from "../helpers.js";

const run = promisify(execFile);
const names = () => naming(inject("funilEnv"));

let operator: Workspace;
let nc: NatsConnection;
// Ids of this run: the platform data is global, so every test keeps to its own learners.
const run_ = randomBytes(4).toString("hex");
const id = (name: string) => `${name}_${run_}`;

async function publish(subject: string, data: unknown, msgID?: string) {
  const js = jetstream(nc);
  await js.publish(names().subject(`platform.${subject}`), JSON.stringify(data), msgID ? { msgID } : {});
}

beforeAll(async () => {
  operator = await newWorkspace({ operator: true, scopes: ["platform.read"] });
  nc = await connect({ servers: inject("natsUrl") });
});
afterAll(async () => {
  await nc?.close();
});

describe("access (docs/api/learners.md (operator workspace and platform.read), docs/api/conventions.md §Scopes per route)", () => {
  it("docs/api/learners.md (operator workspace and platform.read): only an operator workspace's key with platform.read reads learners; any other key gets 403 forbidden_platform", async () => {
    const withoutScope = ALL_SCOPES.filter((s) => s !== "platform.read");
    const others = await Promise.all([
      newWorkspace({ operator: true, scopes: withoutScope }),
      newWorkspace({ operator: false, scopes: ["platform.read"] }),
      newWorkspace({ operator: false, scopes: ALL_SCOPES }),
      newWorkspace({ operator: false, scopes: withoutScope }),
    ]);
    for (const path of ["/platform/users", "/platform/users/anyone"]) {
      for (const ws of others) {
        const res = await ws.call("GET", path);
        expect(res.status).toBe(403);
        expect(res.body.error.code).toBe("forbidden_platform");
      }
      expect((await request("GET", `${gatewayUrl()}/api/v1${path}`)).status).toBe(401);
    }
    expect((await operator.call("GET", "/platform/users")).status).toBe(200);
  });
});

describe("live stream (docs/api/learners.md §Ingest)", () => {
  it("docs/api/learners.md §GET /platform/users/{id}: messages out of order and repeated give the hand-computed learner, for every operator workspace alike", async () => {
    const u = id("live");
    const at = (d: string) => `2026-11-${d}T10:00:00.000Z`;
    await publish("course.upserted", {
      courseId: id("c"),
      title: "Curso Ao Vivo",
      lessons: [{ lessonId: id("l"), title: "Aula" }],
    });
    // Progress before the user exists, the newer message before the older.
    await publish("lesson.progress", {
      userId: u,
      lessonId: id("l"),
      courseId: id("c"),
      watchSec: 600,
      watchPct: 100,
      completed: true,
      at: new Date().toISOString(),
    });
    await publish("lesson.progress", {
      userId: u,
      lessonId: id("l"),
      courseId: id("c"),
      watchSec: 60,
      watchPct: 10,
      completed: false,
      at: at("01"),
    });
    await publish("user.upserted", {
      userId: u,
      name: "Lívia Ávila",
      email: `${u}@live.io`,
      createdAt: at("01"),
    });
    const enrollment = {
      userId: u,
      courseId: id("c"),
      status: "active",
      progressPct: 100,
      startedAt: at("01"),
      completedAt: at("02"),
    };
    await publish("enrollment.upserted", enrollment, `enr-${u}`);
    await publish("enrollment.upserted", enrollment, `enr-${u}`); // same message id: dropped
    await publish("enrollment.upserted", enrollment); // same content, new id: applied again, changes nothing
    await publish("session.opened", { userId: u, at: at("03"), ip: "192.0.2.3" });
    await publish("session.opened", { userId: u, at: at("02"), ip: "192.0.2.2" });
    await publish("certificate.issued", {
      userId: u,
      code: id("cert"),
      courseId: id("c"),
      courseTitle: "Curso Ao Vivo",
      issuedAt: at("02"),
    });

    const listed = await waitFor(async () => {
      const res = await operator.call("GET", `/platform/users?q=${encodeURIComponent("LIVIA AVILA")}`);
      const item = res.body.data?.[0];
      return item?.certificates === 1 && item.lastLoginAt ? item : undefined;
    });
    expect(listed).toEqual({
      id: u,
      name: "Lívia Ávila",
      email: `${u}@live.io`,
      createdAt: at("01"),
      lastLoginAt: at("03"),
      lastActiveAt: at("03"),
      enrolledCourses: 1,
      completedCourses: 1,
      certificates: 1,
    });
    const other = await newWorkspace({ operator: true, scopes: ["platform.read"] });
    const [mine, theirs] = await Promise.all([
      operator.call("GET", `/platform/users/${u}?days=7`),
      other.call("GET", `/platform/users/${u}?days=7`),
    ]);
    expect(mine.status).toBe(200);
    expect(theirs.body).toEqual(mine.body);
    expect(mine.body).toMatchObject({
      windowDays: 7,
      access: { lastIp: "192.0.2.3" },
      courses: [{ courseId: id("c"), courseTitle: "Curso Ao Vivo", progressPct: 100, completedAt: at("02") }],
      lessons: [
        { lessonId: id("l"), title: "Aula", courseTitle: "Curso Ao Vivo", watchSec: 600, completed: true },
      ],
      certificates: [{ code: id("cert"), courseTitle: "Curso Ao Vivo" }],
      library: [],
    });
  });

  it("docs/api/learners.md §Ingest: an invalid message goes to the dead letters with its reason, and the stream goes on", async () => {
    const js = jetstream(nc);
    const letters = await js.consumers.get(names().stream("PLATFORM"), {
      filter_subjects: names().subject("platform.deadletter"),
      deliver_policy: DeliverPolicy.StartTime,
      opt_start_time: new Date(Date.now() - 1000).toISOString(),
    });
    const u = id("dead");
    await publish("lesson.progress", {
      userId: u,
      lessonId: "l",
      courseId: "c",
      watchSec: -5,
      watchPct: 10,
      completed: false,
      at: "2026-11-01T00:00:00Z",
    });
    await nc.publish(names().subject("platform.session.seen"), "{not json");
    await publish("user.upserted", {
      userId: u,
      name: "After the bad ones",
      email: `${u}@x.io`,
      createdAt: "2026-11-01T00:00:00Z",
    });
    await publish("enrollment.upserted", {
      userId: u,
      courseId: "c",
      status: "active",
      progressPct: 0,
      startedAt: null,
      completedAt: null,
    });
    await waitFor(async () =>
      (await operator.call("GET", `/platform/users/${u}`)).status === 200 ? true : undefined,
    );
    const seen: Array<{ subject: string; reason: string }> = [];
    const messages = await letters.fetch({ max_messages: 10, expires: 2000 });
    for await (const m of messages) {
      seen.push(m.json());
      if (seen.length === 2) break;
    }
    expect(seen.map((l) => [l.subject, l.reason])).toEqual(
      expect.arrayContaining([
        ["platform.lesson.progress", "data.watchSec: must be >= 0"],
        ["platform.session.seen", "data: is not JSON"],
      ]),
    );
  });
});

describe("GET /platform/users[/{id}] input (docs/api/conventions.md §Errors; docs/api/learners.md §GET /platform/users/{id})", () => {
  it("docs/api/learners.md §GET /platform/users/{id}: days must be an integer 1..365 (400 validation_failed); an unknown learner is 404 not_found", async () => {
    for (const days of ["0", "366", "7.5", "abc", ""]) {
      const res = await operator.call("GET", `/platform/users/x?days=${days}`);
      expect(res.status, `days=${days}`).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
    }
    const missing = await operator.call("GET", "/platform/users/nobody-at-all");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("not_found");
  });

  it("docs/api/conventions.md §Errors: bad list parameters are 400 with a stable code, never a 500", async () => {
    const cases: Array<[string, string]> = [
      ["limit=0", "validation_failed"],
      ["limit=501", "validation_failed"],
      ["activeSince=yesterday", "validation_failed"],
      ["activeBefore=2026-13-01T00:00:00Z", "validation_failed"],
      [`q=${"x".repeat(201)}`, "validation_failed"],
      ["q=", "validation_failed"],
      ["workspaceId=ws_1", "validation_failed"],
      ["cursor=not-a-cursor", "invalid_cursor"],
    ];
    for (const [query, code] of cases) {
      const res = await operator.call("GET", `/platform/users?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code, query).toBe(code);
    }
  });

  it("the gateway's /metrics counts the learner routes, and /readyz fails naming learning when it is unreachable", async () => {
    await operator.call("GET", "/platform/users?limit=1");
    const metrics = await request("GET", `${gatewayUrl()}/metrics`);
    expect(metrics.body).toMatch(
      /funil_http_requests_total\{[^}]*route="\/api\/v1\/platform\/users"[^}]*status="200"/,
    );
    const orphan = await gatewayCopy({ LEARNING_URL: "http://127.0.0.1:9", UPSTREAM_TIMEOUT_MS: "2000" });
    try {
      const ready = await request("GET", `${orphan.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.body.error.message).toContain("learning");
      const res = await request("GET", `${orphan.url}/api/v1/platform/users`, undefined, {
        authorization: `Bearer ${operator.key}`,
      });
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe("unavailable");
    } finally {
      await orphan.stop();
    }
  });

  it("docs/api/conventions.md §Errors: the learner routes are in the OpenAPI document", async () => {
    const doc = await request("GET", `${gatewayUrl()}/api/v1/openapi.json`);
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining(["/api/v1/platform/users", "/api/v1/platform/users/{id}"]),
    );
  });
});

describe("npm run import:platform (docs/api/learners.md §Ingest)", () => {
  it("docs/api/learners.md §Ingest: a file with a bad line in the middle imports nothing and names the line; --skip-bad imports the rest", async () => {
    const u = id("bulk");
    const line = (subject: string, data: unknown) => JSON.stringify({ subject: `platform.${subject}`, data });
    const dir = await mkdtemp(join(tmpdir(), "funil-e2e-import-"));
    const path = join(dir, "platform.ndjson");
    await writeFile(
      path,
      [
        line("user.upserted", {
          userId: u,
          name: "Bulk Learner",
          email: `${u}@bulk.io`,
          createdAt: "2026-01-01T00:00:00Z",
        }),
        line("enrollment.upserted", {
          userId: u,
          courseId: "c",
          status: "active",
          progressPct: 5,
          startedAt: null,
          completedAt: null,
        }),
        line("library.read", { userId: u, docId: "d", readSec: 10, read: "yes", at: "2026-11-01T00:00:00Z" }),
        line("session.seen", { userId: u, at: "2026-11-02T00:00:00Z" }),
      ].join("\n"),
    );
    const env = { ...process.env, FUNIL_ENV: inject("funilEnv") };
    const failed = await run("node", ["services/learning/dist/import.js", path], { env }).catch((e) => e);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain("line 3: data.read: Invalid input: expected boolean, received string");
    expect((await operator.call("GET", `/platform/users/${u}`)).status).toBe(404);

    const ok = await run("node", ["services/learning/dist/import.js", path, "--skip-bad"], { env });
    expect(ok.stderr).toMatch(/imported 3 of 4 lines .* lines\/s.*1 rejected/);
    const res = await operator.call("GET", `/platform/users?q=${u}`);
    expect(res.body.data).toMatchObject([
      { id: u, lastLoginAt: null, lastActiveAt: "2026-11-02T00:00:00.000Z" },
    ]);
  });
});

describe("learning speaks gRPC (docs/architecture.md §The shape: a standard gRPC client calls every service)", () => {
  it("a plain @grpc/grpc-js client lists learners and gets NOT_FOUND and INVALID_ARGUMENT like HTTP's 404 and 400", async () => {
    const def = protoLoader.loadSync("funil/learning/v1/learners.proto", {
      includeDirs: [fileURLToPath(new URL("../../proto", import.meta.url))],
      defaults: true,
    });
    type Ctor = new (addr: string, creds: grpc.ChannelCredentials) => grpc.Client;
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      funil: { learning: { v1: { LearnerService: Ctor } } };
    };
    const client = new pkg.funil.learning.v1.LearnerService(
      new URL(inject("learningUrl")).host,
      grpc.credentials.createInsecure(),
    );
    const call = (method: string, req: unknown) =>
      new Promise<{ data?: unknown[] }>((resolve, reject) =>
        (client as unknown as Record<string, (r: unknown, cb: (e: unknown, r: never) => void) => void>)[
          method
        ]!(req, (err, res) => (err ? reject(err) : resolve(res))),
      );
    try {
      expect(Array.isArray((await call("ListLearners", { limit: 1 })).data)).toBe(true);
      await expect(call("GetLearner", { id: "nobody-over-grpc" })).rejects.toMatchObject({
        code: grpc.status.NOT_FOUND,
      });
      await expect(call("GetLearner", { id: "x", days: 0 })).rejects.toMatchObject({
        code: grpc.status.INVALID_ARGUMENT,
      });
    } finally {
      client.close();
    }
  });
});
