import type { AddressInfo } from "node:net";
import { createFunil } from "@funil/client";
import { signWebhook } from "@funil/client/webhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayUrl, newWorkspace, type Workspace, waitFor } from "../tests/helpers.js";
import { type FunilEvent, webhookReceiver } from "./webhook-receiver.js";

let ws: Workspace;
let secret = "";
const events: Array<{ event: FunilEvent; delivery: string }> = [];
/** The last delivery as it arrived: to replay it. */
let captured: { body: string; headers: Record<string, string> } | undefined;
const server = webhookReceiver({
  secret: () => secret,
  onEvent: (event, delivery) => void events.push({ event, delivery }),
});
server.on("request", (req) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    captured = {
      body,
      headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
    };
  });
});
let url = "";
const send = (body: string, headers: Record<string, string>) =>
  fetch(url, { method: "POST", body, headers: { "content-type": "application/json", ...headers } });

beforeAll(async () => {
  ws = await newWorkspace();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/funil`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe("examples/webhook-receiver", () => {
  it("takes Funil's signed deliveries; refuses replays, tampering and stale signatures", async () => {
    const funil = createFunil({ apiKey: ws.key, baseUrl: gatewayUrl() });
    const sub = await funil.createWebhook({ body: { url, events: ["contact.created"] } });
    secret = sub.secret;
    const contact = await funil.upsertContact({ body: { name: "Hook", email: `hook.${ws.id}@example.com` } });
    const got = await waitFor(async () => events.find((e) => e.event.data.id === contact.id));
    expect(got.event.type).toBe("contact.created");
    await waitFor(async () => captured);
    const first = captured!;

    // The very same signed request again: a replay.
    const replay = await send(first.body, first.headers);
    expect(replay.status).toBe(409);
    // The body changed under the signature.
    const tampered = await send(first.body.replace("Hook", "Hack"), {
      ...first.headers,
      "x-funil-signature": `t=${Math.floor(Date.now() / 1000)},v1=${"0".repeat(64)}`,
    });
    expect(tampered.status).toBe(400);
    expect(await tampered.text()).toBe("signature_mismatch");
    // Signed ten minutes ago: outside the tolerance.
    const old = Math.floor(Date.now() / 1000) - 600;
    const stale = await send(first.body, {
      ...first.headers,
      "x-funil-signature": `t=${old},v1=${signWebhook(first.body, old, secret)}`,
    });
    expect(stale.status).toBe(400);
    expect(await stale.text()).toBe("timestamp_out_of_tolerance");
    // The sender trying the same delivery again, signed afresh: acknowledged, handled once.
    const now = Math.floor(Date.now() / 1000) + 1;
    const again = await send(first.body, {
      ...first.headers,
      "x-funil-signature": `t=${now},v1=${signWebhook(first.body, now, secret)}`,
    });
    expect(again.status).toBe(200);
    expect(events.filter((e) => e.event.data.id === contact.id)).toHaveLength(1);
  });
});
