import * as http2 from "node:http2";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { eventsSubscriber, gatewayUrl, newWorkspace, type Workspace, waitFor } from "../helpers.js";
import { type Receiver, startReceiver } from "../receiver.js";
import { contact, deal, member, pipeline } from "./crm-fixtures.js";

/*
 * What a client sends is what is kept (the findings of the independent clients and fuzzers): custom-field
 * keys byte for byte, dates that exist, references of the caller's own workspace, and text that is
 * Unicode — or a 4xx naming the field, never a silent change.
 */
let ws: Workspace;
let other: Workspace;
let events: Awaited<ReturnType<typeof eventsSubscriber>>;
let rx: Receiver;
let pipelineId: string;

// Keys a camel-casing would change, and one it would not.
const KEYS = ["plan_type", "Plan_Type_2", "a__b", "utm_like_key", "plain"];

beforeAll(async () => {
  [ws, other, events, rx] = await Promise.all([
    newWorkspace(),
    newWorkspace(),
    eventsSubscriber(),
    startReceiver(),
  ]);
  for (const entity of ["contact", "opportunity"])
    for (const [fieldKey, type] of [...KEYS.map((k) => [k, "text"]), ["signed_on", "date"]] as const) {
      const res = await ws.admin("POST", `/workspaces/${ws.id}/custom-fields`, {
        entity,
        fieldKey,
        label: fieldKey,
        type,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
  pipelineId = (await pipeline(ws)).id;
});
afterAll(async () => {
  await Promise.all([events.close(), rx.close()]);
});

/** crm's ContactService as a gRPC caller outside the project sees it (its .proto, @grpc/grpc-js). */
function grpcUpsert() {
  const protoDir = fileURLToPath(new URL("../../proto", import.meta.url));
  const def = protoLoader.loadSync("funil/crm/v1/contacts.proto", {
    includeDirs: [protoDir],
    defaults: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    funil: { crm: { v1: { ContactService: grpc.ServiceClientConstructor } } };
  };
  const Ctor = pkg.funil.crm.v1.ContactService;
  return { Ctor, method: Ctor.service.UpsertContact! };
}

let seq = 0;
const phone = () => `+55 21 9${String(Date.now()).slice(-6)}${String(++seq).padStart(2, "0")}`;

describe("docs/api/conventions.md §Text is kept as sent: customFields keys are the definitions' fieldKeys, byte for byte", () => {
  it("contacts: POST, GET, the event and a webhook delivery keep plan_type; PATCH plan_type: null removes it", async () => {
    const sub = await ws.call("POST", "/webhooks", {
      url: rx.url(`/kept-${Date.now()}`),
      events: ["contact.created", "contact.updated"],
    });
    expect(sub.status).toBe(201);
    const fields = Object.fromEntries(KEYS.map((k, i) => [k, `v${i}`]));
    const made = await ws.call("POST", "/contacts", { name: "Keys", phone: phone(), customFields: fields });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body.customFields).toEqual(fields);
    expect(Object.keys(made.body.customFields).sort()).toEqual([...KEYS].sort());
    const read = await ws.call("GET", `/contacts/${made.body.id}`);
    expect(read.body.customFields).toEqual(fields);
    const created = await events.next("contact.created", (e) => e.data.id === made.body.id);
    expect(created.data.customFields).toEqual(fields);

    // The key as the API showed it is the key it accepts back.
    const patched = await ws.call("PATCH", `/contacts/${made.body.id}`, {
      customFields: { plan_type: null, Plan_Type_2: "changed" },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const { plan_type: _, ...rest } = fields;
    expect(patched.body.customFields).toEqual({ ...rest, Plan_Type_2: "changed" });
    expect((await ws.call("GET", `/contacts/${made.body.id}`)).body.customFields).toEqual({
      ...rest,
      Plan_Type_2: "changed",
    });
    const camel = await ws.call("PATCH", `/contacts/${made.body.id}`, { customFields: { planType: "x" } });
    expect(camel.status).toBe(400);
    expect(camel.body.error.details.map((d: { path: string }) => d.path)).toEqual([
      "body.customFields.planType",
    ]);

    const delivered = await waitFor(async () => {
      const got = rx.at(new URL(sub.body.subscription.url).pathname);
      return got.find((r) => r.body?.type === "contact.updated" && r.body.data.id === made.body.id);
    }, 15_000);
    expect(delivered.body.data.customFields).toEqual({ ...rest, Plan_Type_2: "changed" });
    expect(delivered.raw).toContain('"Plan_Type_2":"changed"');
  });

  it("deals: POST (and its Idempotency-Key replay), GET and PATCH keep the keys; PATCH plan_type: null removes it", async () => {
    const c = await contact(ws);
    const fields = { plan_type: "gold", a__b: "x" };
    const key = { "idempotency-key": `kept-${Date.now()}` };
    const d = await deal(ws, { contactId: c.id, pipelineId, customFields: fields }, key);
    expect(d.customFields).toEqual(fields);
    const replay = await ws.call(
      "POST",
      "/opportunities",
      { title: d.title, contactId: c.id, pipelineId, customFields: fields },
      key,
    );
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body.customFields).toEqual(fields);
    expect((await ws.call("GET", `/opportunities/${d.id}`)).body.customFields).toEqual(fields);
    const event = await events.next("opportunity.created", (e) => e.data.id === d.id);
    expect(event.data.customFields).toEqual(fields);
    const patched = await ws.call("PATCH", `/opportunities/${d.id}`, { customFields: { plan_type: null } });
    expect(patched.status).toBe(200);
    expect(patched.body.customFields).toEqual({ a__b: "x" });
    expect((await ws.call("GET", `/opportunities/${d.id}`)).body.customFields).toEqual({ a__b: "x" });
  });
});

describe("docs/api/contacts.md §GET /custom-fields: a date custom field holds a day that exists, as YYYY-MM-DD", () => {
  it("2023-02-29, 2024-02-30, 2024-04-31 and date-times are a 400 naming the field, on contacts and deals", async () => {
    const c = await contact(ws);
    const d = await deal(ws, { contactId: c.id, pipelineId });
    for (const bad of [
      "2023-02-29",
      "2024-02-30",
      "2024-04-31",
      "2024-13-01",
      "2024-02-30T00:00:00Z",
      "2024-02-01T00:00:00Z",
    ]) {
      for (const [path, body] of [
        [`/contacts/${c.id}`, { customFields: { signed_on: bad } }],
        [`/opportunities/${d.id}`, { customFields: { signed_on: bad } }],
      ] as const) {
        const res = await ws.call("PATCH", path, body);
        expect(res.status, `${path} ${bad}`).toBe(400);
        expect(res.body.error.code).toBe("validation_failed");
        expect(res.body.error.details.map((x: { path: string }) => x.path)).toEqual([
          "body.customFields.signed_on",
        ]);
      }
      const created = await ws.call("POST", "/contacts", {
        phone: phone(),
        customFields: { signed_on: bad },
      });
      expect(created.status, bad).toBe(400);
    }
    for (const good of ["2024-02-29", "2000-02-29", "2023-12-31"]) {
      const res = await ws.call("PATCH", `/contacts/${c.id}`, { customFields: { signed_on: good } });
      expect(res.status).toBe(200);
      expect(res.body.customFields.signed_on).toBe(good);
    }
  });

  it("a timestamp with a day that does not exist is a 400 naming it (body and query)", async () => {
    const c = await contact(ws);
    const res = await ws.call("POST", "/opportunities", {
      title: "Impossible",
      contactId: c.id,
      pipelineId,
      expectedCloseAt: "2023-02-29T10:00:00Z",
    });
    expect(res.status).toBe(400);
    expect(res.body.error.details.map((x: { path: string }) => x.path)).toEqual(["body.expectedCloseAt"]);
    const list = await ws.call("GET", "/contacts?createdAfter=2024-04-31T00:00:00Z");
    expect(list.status).toBe(400);
    expect(list.body.error.details.map((x: { path: string }) => x.path)).toEqual(["query.createdAfter"]);
  });
});

describe("docs/api/contacts.md §Contact: a contact's owner is a member of the caller's workspace", () => {
  it("POST and PATCH /contacts with another workspace's member (or no member) → 422 invalid_reference, nothing kept", async () => {
    const theirs = await member(other);
    const mine = await member(ws);
    const p = phone();
    for (const ownerUserId of [theirs.id, "usr_never_existed"]) {
      const res = await ws.call("POST", "/contacts", { name: "Owned", phone: p, ownerUserId });
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.error.code).toBe("invalid_reference");
      expect(res.body.error.details.map((x: { path: string }) => x.path)).toEqual(["ownerUserId"]);
    }
    expect((await ws.call("GET", `/contacts?phone=${encodeURIComponent(p)}`)).body.data).toEqual([]);

    const made = await ws.call("POST", "/contacts", { name: "Owned", phone: p, ownerUserId: mine.id });
    expect(made.status).toBe(201);
    expect(made.body.ownerUserId).toBe(mine.id);
    // An upsert that finds the contact is a write too.
    const upsert = await ws.call("POST", "/contacts", { phone: p, ownerUserId: theirs.id });
    expect(upsert.status).toBe(422);
    const patch = await ws.call("PATCH", `/contacts/${made.body.id}`, { ownerUserId: theirs.id });
    expect(patch.status).toBe(422);
    expect(patch.body.error.code).toBe("invalid_reference");
    expect((await ws.call("GET", `/contacts/${made.body.id}`)).body.ownerUserId).toBe(mine.id);
    expect(
      (await ws.call("PATCH", `/contacts/${made.body.id}`, { ownerUserId: null })).body.ownerUserId,
    ).toBe(null);
  });
});

/** A raw JSON body, bytes as given. */
async function rawPost(path: string, body: Uint8Array) {
  const res = await fetch(`${gatewayUrl()}/api/v1${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${ws.key}`, "content-type": "application/json" },
    body,
  });
  // biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies freely
  return { status: res.status, body: (await res.json()) as any };
}

describe("docs/api/conventions.md §Text is kept as sent: text is Unicode as sent, or refused naming the field", () => {
  it("a lone surrogate (\\ud800) in a string or a key is a 400 naming it, nothing stored", async () => {
    const p = phone();
    for (const [body, path] of [
      [`{"phone":"${p}","company":"x\\ud800y"}`, "body.company"],
      [`{"phone":"${p}","tags":["ok","\\udfffx"]}`, "body.tags.1"],
      [`{"phone":"${p}","customFields":{"plan_type":"a\\ud83d"}}`, "body.customFields.plan_type"],
      [`{"phone":"${p}","name":"\\ude00\\ud83d"}`, "body.name"],
    ]) {
      const res = await rawPost("/contacts", new TextEncoder().encode(body));
      expect(res.status, body).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
      expect(res.body.error.details.map((x: { path: string }) => x.path)).toEqual([path]);
    }
    expect((await ws.call("GET", `/contacts?phone=${encodeURIComponent(p)}`)).body.data).toEqual([]);
    // A pair written as two escapes is one character, and kept.
    const ok = await rawPost(
      "/contacts",
      new TextEncoder().encode(`{"phone":"${p}","company":"x\\ud83d\\ude00y"}`),
    );
    expect(ok.status).toBe(201);
    expect(ok.body.company).toBe("x😀y");
  });

  it("invalid UTF-8 bytes inside a string are a 400 naming the field (body when no field holds them)", async () => {
    const p = phone();
    const enc = (s: string) => [...new TextEncoder().encode(s)];
    const cases: Array<[number[], string]> = [
      [[...enc(`{"phone":"${p}","company":"x`), 0xff, ...enc(`y"}`)], "body.company"],
      [[...enc(`{"phone":"${p}","company":"x`), 0xed, 0xa0, 0x80, ...enc(`y"}`)], "body.company"],
      [[...enc(`{"phone":"${p}","notes":"`), 0xc3, ...enc(`"}`)], "body.notes"],
      [
        [...enc(`{"phone":"${p}","customFields":{"plan`), 0x80, ...enc(`":"a"}}`)],
        "body.customFields.plan\uFFFD",
      ],
      [[...enc(`{"phone":"${p}",`), 0xfe, ...enc(`"name":"a"}`)], "body"],
    ];
    for (const [bytes, path] of cases) {
      const res = await rawPost("/contacts", Uint8Array.from(bytes));
      expect(res.status, String(bytes)).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
      // A key with invalid bytes is named as it decodes, U+FFFD where the bytes were.
      expect(res.body.error.details.map((x: { path: string }) => x.path)).toEqual([path]);
      expect(res.body.error.details[0].message).toMatch(/UTF-8/);
    }
    expect((await ws.call("GET", `/contacts?phone=${encodeURIComponent(p)}`)).body.data).toEqual([]);
  });

  it("a query parameter whose percent-encoding is not UTF-8 is a 400 naming it, not a filter on its raw text", async () => {
    for (const raw of ["%FF", "a%ED%A0%80b", "%C3", "%E0%80%80"]) {
      const res = await ws.call("GET", `/contacts?query=${raw}`);
      expect(res.status, raw).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
      expect(res.body.error.details.map((x: { path: string }) => x.path)).toEqual(["query.query"]);
    }
    const astral = await ws.call("GET", "/contacts?query=%F0%9F%98%80");
    expect(astral.status).toBe(200);
  });

  it("a value that begins with U+FEFF (a byte order mark) is kept whole, through the API and from a gRPC caller", async () => {
    const made = await ws.call("POST", "/contacts", { company: "\uFEFFAcme", phone: phone() });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body.company).toBe("\uFEFFAcme");
    expect((await ws.call("GET", `/contacts/${made.body.id}`)).body.company).toBe("\uFEFFAcme");

    // gRPC reaches crm through protobuf-es's own decoder (the Connect library's path), not the generated codec.
    const { Ctor, method } = grpcUpsert();
    const p = phone();
    const client = new Ctor(new URL(inject("crmUrl")).host, grpc.credentials.createInsecure());
    try {
      const answer = await new Promise<grpc.ServiceError | null>((resolve) =>
        client.makeUnaryRequest(
          method.path,
          method.requestSerialize,
          method.responseDeserialize,
          { workspaceId: ws.id, fields: { company: "\uFEFFGrpc", phone: p } },
          (err) => resolve(err),
        ),
      );
      expect(answer?.details ?? null).toBeNull();
    } finally {
      client.close();
    }
    const [stored] = (await ws.call("GET", `/contacts?phone=${encodeURIComponent(p)}`)).body.data;
    expect(stored.company).toBe("\uFEFFGrpc");
  });

  it("an RPC caller's invalid UTF-8 in a string field is refused, never stored rewritten (gRPC and Connect)", async () => {
    const { Ctor, method } = grpcUpsert();
    const p = phone();
    const bytes = Buffer.from(
      method.requestSerialize({ workspaceId: ws.id, fields: { company: "xAAAy", phone: p } }),
    );
    bytes.set([0xed, 0xa0, 0x80], bytes.indexOf("AAA")); // a surrogate written as UTF-8: no character

    // gRPC: the Connect library refuses a message it cannot parse with INTERNAL, as grpc-go does.
    const client = new Ctor(new URL(inject("crmUrl")).host, grpc.credentials.createInsecure());
    try {
      const answer = await new Promise<grpc.ServiceError | null>((resolve) =>
        client.makeUnaryRequest(
          method.path,
          (b: Buffer) => b,
          method.responseDeserialize,
          bytes,
          (err) => resolve(err),
        ),
      );
      expect(answer?.code, answer?.details).toBe(grpc.status.INTERNAL);
      expect(answer?.details).toMatch(/utf-8/i);
    } finally {
      client.close();
    }
    // Connect (what the gateway speaks): invalid_argument.
    const session = http2.connect(inject("crmUrl"));
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = session.request({
          ":method": "POST",
          ":path": method.path,
          "content-type": "application/proto",
        });
        req.on("response", (headers) => resolve(Number(headers[":status"])));
        req.on("error", reject);
        req.end(bytes);
        req.resume();
      });
      expect(status).toBe(400);
    } finally {
      session.close();
    }
    expect((await ws.call("GET", `/contacts?phone=${encodeURIComponent(p)}`)).body.data).toEqual([]);
  });
});
