import { fileURLToPath } from "node:url";
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

describe("crm speaks gRPC (issue 2: Connect on HTTP/2)", () => {
  it("a plain @grpc/grpc-js client upserts and reads a contact", async () => {
    const ws = await newWorkspace();
    const def = protoLoader.loadSync("funil/crm/v1/contacts.proto", {
      includeDirs: [protoDir],
      keepCase: false,
      defaults: true,
    });
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      funil: {
        crm: { v1: { ContactService: new (addr: string, creds: grpc.ChannelCredentials) => grpc.Client } };
      };
    };
    const target = new URL(inject("crmUrl")).host;
    const client = new pkg.funil.crm.v1.ContactService(target, grpc.credentials.createInsecure());
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
});
