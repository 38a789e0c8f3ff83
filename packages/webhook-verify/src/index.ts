import { createHmac, type KeyObject, timingSafeEqual } from "node:crypto";

/**
 * What a receiver of Funil webhooks needs (docs/api/webhooks.md §Signature):
 * the header `x-funil-signature: t=<unix seconds>,v1=<hex>[,v1=<hex>]` holds
 * HMAC-SHA256 of `<t>.<raw body>` under the subscription's secret. Several
 * v1 values appear while a rotated secret still signs (24 h): any one of them
 * that matches is enough. No dependency beyond node:crypto, so any receiver
 * can install it.
 */
export interface VerifyOptions {
  /** How far t may be from now, in seconds (replay protection). Default 300. */
  toleranceSec?: number;
  /** The current time (tests); default the system clock. */
  now?: Date;
}

export type VerifyFailure = "malformed_header" | "timestamp_out_of_tolerance" | "signature_mismatch";

export class WebhookSignatureError extends Error {
  override readonly name = "WebhookSignatureError";
  constructor(
    readonly reason: VerifyFailure,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The signature a sender computes: hex HMAC-SHA256 of `<t>.<raw body>`. The
 * secret may be given as a KeyObject (createSecretKey of its UTF-8 bytes), so
 * that a sender signing many requests with it prepares the key once.
 */
export function signWebhook(
  rawBody: string | Uint8Array,
  timestamp: number,
  secret: string | KeyObject,
): string {
  return createHmac("sha256", secret).update(`${timestamp}.`).update(rawBody).digest("hex");
}

/** The header's t and v1 values; undefined when it is not of the documented form. */
export function parseSignatureHeader(
  header: string,
): { timestamp: number; signatures: string[] } | undefined {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) return undefined;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === "t") {
      if (!/^\d{1,12}$/.test(value)) return undefined;
      timestamp = Number(value);
    } else if (key === "v1") {
      if (/^[0-9a-f]{64}$/i.test(value)) signatures.push(value.toLowerCase());
    }
    // Other schemes (v0, a future v2) are ignored, as the format allows.
  }
  if (timestamp === undefined || signatures.length === 0) return undefined;
  return { timestamp, signatures };
}

/**
 * Checks a delivery: the raw body exactly as received (before any JSON
 * parsing), the x-funil-signature header and the subscription's secret.
 * Returns the signed timestamp, or throws WebhookSignatureError saying why.
 * Every v1 value is compared in constant time, whatever the outcome of the
 * others, so the time taken says nothing about the secret.
 */
export function verifyWebhookSignature(
  rawBody: string | Uint8Array,
  header: string | string[] | undefined,
  secret: string,
  options: VerifyOptions = {},
): { timestamp: number } {
  const value = Array.isArray(header) ? header.join(",") : header;
  const parsed = value ? parseSignatureHeader(value) : undefined;
  if (!parsed) throw new WebhookSignatureError("malformed_header", "missing or malformed signature header");
  const tolerance = options.toleranceSec ?? 300;
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (Math.abs(now - parsed.timestamp) > tolerance)
    throw new WebhookSignatureError(
      "timestamp_out_of_tolerance",
      `signature timestamp is more than ${tolerance} s from now`,
    );
  const expected = Buffer.from(signWebhook(rawBody, parsed.timestamp, secret), "hex");
  let matched = false;
  for (const candidate of parsed.signatures) {
    if (timingSafeEqual(expected, Buffer.from(candidate, "hex"))) matched = true;
  }
  if (!matched) throw new WebhookSignatureError("signature_mismatch", "no signature matches the secret");
  return { timestamp: parsed.timestamp };
}
