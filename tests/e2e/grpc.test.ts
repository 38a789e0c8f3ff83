import { fileURLToPath } from "node:url";
import { equals, fromBinary } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { ContactService, GetContactResponseSchema, ListContactsResponseSchema } from "@funil/contracts";
import { rpcClient } from "@funil/rpc";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { describe, expect, inject, it } from "vitest";
import { newWorkspace } from "../helpers.js";

const protoDir = fileURLToPath(new URL("../../proto", import.meta.url));

type Callback<T> = (err: grpc.ServiceError | null, res: T) => void;
function promisify<Req, Res>(client: grpc.Client, method: string) {
  return (req: Req) =>
    new Promise<Res>((resolve, reject) =>
      (client as unknown as Record<string, (r: Req, cb: Callback<Res>) => void>)[method]!(req, (err, res) =>
        err ? reject(err) : resolve(res),
      ),
    );
}

type ServiceCtor = (new (
  addr: string,
  creds: grpc.ChannelCredentials,
) => grpc.Client) & { service: Record<string, { responseSerialize(value: unknown): Buffer }> };

function grpcContacts() {
  const def = protoLoader.loadSync("funil/crm/v1/contacts.proto", {
    includeDirs: [protoDir],
    keepCase: false,
    defaults: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    funil: { crm: { v1: { ContactService: ServiceCtor } } };
  };
  const Ctor = pkg.funil.crm.v1.ContactService;
  return { Ctor, client: new Ctor(new URL(inject("crmUrl")).host, grpc.credentials.createInsecure()) };
}

describe("crm speaks gRPC (docs/architecture.md §The shape: Connect on HTTP/2)", () => {
  it("a plain @grpc/grpc-js client upserts and reads a contact", async () => {
    const ws = await newWorkspace();
    const { client } = grpcContacts();
    try {
      const upsert = promisify<unknown, { contact: { id: string; name: string }; created: boolean }>(
        client,
        "UpsertContact",
      );
      const get = promisify<unknown, { contact: { id: string; phone: string } }>(client, "GetContact");
      const created = await upsert({
        workspaceId: ws.id,
        fields: { name: "Over gRPC", phone: "+1 555 123 4567" },
      });
      expect(created.created).toBe(true);
      expect(created.contact.name).toBe("Over gRPC");
      const read = await get({ workspaceId: ws.id, id: created.contact.id });
      expect(read.contact.phone).toBe("+1 555 123 4567");
      const viaHttp = await ws.call("GET", `/contacts/${created.contact.id}`);
      expect(viaHttp.body.name).toBe("Over gRPC");
      await expect(get({ workspaceId: "ws_other", id: created.contact.id })).rejects.toMatchObject({
        code: grpc.status.NOT_FOUND,
      });
      // The service validates what the gateway would have: a direct caller gets INVALID_ARGUMENT, not INTERNAL.
      const list = promisify<unknown, unknown>(client, "ListContacts");
      for (const createdAfter of ["0000-01-01T00:00:00Z", "yesterday"])
        await expect(list({ workspaceId: ws.id, createdAfter })).rejects.toMatchObject({
          code: grpc.status.INVALID_ARGUMENT,
        });
    } finally {
      client.close();
    }
  });

  it("docs/architecture.md §The shape: a plain gRPC client gets exactly the answer the gateway's client gets (Connect on HTTP/2)", async () => {
    const ws = await newWorkspace();
    const made = await ws.call("POST", "/contacts", {
      name: "Same Answer",
      phone: "+55 11 97777-0000",
      email: "same@answer.io",
      tags: ["a", "b"],
      utm: { source: "google", campaign: "x" },
    });
    expect(made.status).toBe(201);
    const { Ctor, client } = grpcContacts();
    const gateway = rpcClient(ContactService, inject("crmUrl"));
    try {
      // The plain client's answer, as the bytes it would put on the wire, read with the generated schema.
      const viaGrpc = async (method: string, req: unknown) => {
        const res = await promisify<unknown, unknown>(client, method)(req);
        return Ctor.service[method]!.responseSerialize(res);
      };
      const one = { workspaceId: ws.id, id: made.body.id };
      const viaConnect = await gateway.getContact(one);
      expect(viaConnect.contact?.utm?.campaign).toBe("x");
      expect(
        equals(
          GetContactResponseSchema,
          fromBinary(GetContactResponseSchema, await viaGrpc("GetContact", one)),
          viaConnect,
        ),
      ).toBe(true);

      const page = { workspaceId: ws.id, limit: 10 };
      const listed = await gateway.listContacts(page);
      expect(listed.data).toHaveLength(1);
      expect(
        equals(
          ListContactsResponseSchema,
          fromBinary(ListContactsResponseSchema, await viaGrpc("ListContacts", page)),
          listed,
        ),
      ).toBe(true);

      // Errors too: the same status code and the same stable error code in the metadata.
      const missing = { workspaceId: ws.id, id: "ct_missing" };
      const grpcError = await viaGrpc("GetContact", missing).catch((e: grpc.ServiceError) => e);
      const connectError = await gateway.getContact(missing).catch((e: ConnectError) => e);
      expect(connectError).toBeInstanceOf(ConnectError);
      expect((grpcError as grpc.ServiceError).code).toBe((connectError as ConnectError).code);
      expect((grpcError as grpc.ServiceError).metadata.get("funil-error-code")).toEqual([
        (connectError as ConnectError).metadata.get("funil-error-code"),
      ]);
    } finally {
      client.close();
    }
  });
});
