/**
 * A webhook receiver (docs/api/webhooks.md §What a receiver gets, §Signature): it verifies each
 * delivery's signature over the raw body, refuses one signed too long ago, refuses a signed request
 * seen before (a replay), and handles each delivery once even when the sender tries it again.
 */
import { createServer, type Server } from "node:http";
import { verifyWebhookSignature, WebhookSignatureError } from "@funil/client/webhooks";

export interface FunilEvent {
  id: string;
  type: string;
  createdAt: string;
  workspaceId: string;
  data: Record<string, unknown>;
}

export interface ReceiverOptions {
  /** The subscription's secret (read at each delivery, so that it can be set once the server listens). */
  secret: () => string;
  onEvent: (event: FunilEvent, deliveryId: string) => void | Promise<void>;
  /** How far the signed time may be from now, in seconds. Default 300. */
  toleranceSec?: number;
}

export function webhookReceiver(opts: ReceiverOptions): Server {
  const tolerance = opts.toleranceSec ?? 300;
  // Signatures and deliveries seen, kept as long as a signature can be accepted at all.
  const seenSignatures = new Map<string, number>();
  const handled = new Map<string, number>();
  const forget = (now: number) => {
    for (const seen of [seenSignatures, handled])
      for (const [key, at] of seen) if (now - at > tolerance * 2000) seen.delete(key);
  };
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const raw = Buffer.concat(chunks);
      const signature = String(req.headers["x-funil-signature"] ?? "");
      const delivery = String(req.headers["x-funil-delivery"] ?? "");
      try {
        verifyWebhookSignature(raw, signature, opts.secret(), { toleranceSec: tolerance });
      } catch (err) {
        res.writeHead(400).end(err instanceof WebhookSignatureError ? err.reason : "bad_request");
        return;
      }
      const now = Date.now();
      forget(now);
      // The same signed request again is a replay: every real attempt is signed afresh.
      if (seenSignatures.has(signature)) {
        res.writeHead(409).end("replayed");
        return;
      }
      seenSignatures.set(signature, now);
      // A delivery tried again after its 2xx was lost: acknowledged, not handled twice.
      if (handled.has(delivery)) {
        res.writeHead(200).end("duplicate");
        return;
      }
      try {
        await opts.onEvent(JSON.parse(raw.toString("utf8")) as FunilEvent, delivery);
        handled.set(delivery, now);
        res.writeHead(204).end();
      } catch {
        // Not handled: the sender retries.
        seenSignatures.delete(signature);
        res.writeHead(500).end();
      }
    });
  });
}
