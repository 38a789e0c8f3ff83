import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { verifyWebhookSignature, WebhookSignatureError } from "./index.js";

// Signatures computed here with node:crypto directly, as a receiver in any language would.
const secret = "whsec_0123456789abcdefghijABCDEFGHIJ";
const body = '{"id":"evt_1","type":"contact.created","data":{"name":"Maria"}}';
const t = 1_790_000_000;
const now = new Date(t * 1000);
const hmac = (key: string, ts: number, raw: string) =>
  createHmac("sha256", key).update(`${ts}.${raw}`).digest("hex");

const reason = (fn: () => unknown) => {
  try {
    fn();
    return "ok";
  } catch (err) {
    return (err as WebhookSignatureError).reason;
  }
};

describe("verifyWebhookSignature (docs/api/webhooks.md §Signature)", () => {
  it("docs/api/webhooks.md §Signature 1-3: accepts HMAC-SHA256 of <t>.<raw body> under the secret", () => {
    const header = `t=${t},v1=${hmac(secret, t, body)}`;
    expect(verifyWebhookSignature(body, header, secret, { now })).toEqual({ timestamp: t });
    expect(verifyWebhookSignature(Buffer.from(body), header, secret, { now })).toEqual({ timestamp: t });
  });

  it("docs/api/webhooks.md §Signature 4: the raw bytes count; reformatted JSON does not verify", () => {
    const header = `t=${t},v1=${hmac(secret, t, body)}`;
    const reformatted = JSON.stringify(JSON.parse(body), null, 2);
    expect(reason(() => verifyWebhookSignature(reformatted, header, secret, { now }))).toBe(
      "signature_mismatch",
    );
  });

  it("docs/api/webhooks.md §Signature 5: a wrong secret or a tampered signature is rejected", () => {
    const good = hmac(secret, t, body);
    expect(reason(() => verifyWebhookSignature(body, `t=${t},v1=${good}`, "whsec_other", { now }))).toBe(
      "signature_mismatch",
    );
    const flipped = (good[0] === "a" ? "b" : "a") + good.slice(1);
    expect(reason(() => verifyWebhookSignature(body, `t=${t},v1=${flipped}`, secret, { now }))).toBe(
      "signature_mismatch",
    );
    // The timestamp is signed too: moving it breaks the signature.
    expect(reason(() => verifyWebhookSignature(body, `t=${t + 1},v1=${good}`, secret, { now }))).toBe(
      "signature_mismatch",
    );
  });

  it("docs/api/webhooks.md §Signature 6: a timestamp further than the tolerance (default 300 s) is rejected", () => {
    const at = (ts: number) => `t=${ts},v1=${hmac(secret, ts, body)}`;
    expect(reason(() => verifyWebhookSignature(body, at(t - 300), secret, { now }))).toBe("ok");
    expect(reason(() => verifyWebhookSignature(body, at(t - 301), secret, { now }))).toBe(
      "timestamp_out_of_tolerance",
    );
    expect(reason(() => verifyWebhookSignature(body, at(t + 301), secret, { now }))).toBe(
      "timestamp_out_of_tolerance",
    );
    expect(reason(() => verifyWebhookSignature(body, at(t - 301), secret, { now, toleranceSec: 600 }))).toBe(
      "ok",
    );
  });

  it("docs/api/webhooks.md §POST /webhooks/{id}/rotate-secret: any of several v1 values may match (old and new secret)", () => {
    const header = `t=${t},v1=${hmac("whsec_new", t, body)},v1=${hmac(secret, t, body)}`;
    expect(reason(() => verifyWebhookSignature(body, header, secret, { now }))).toBe("ok");
    expect(reason(() => verifyWebhookSignature(body, header, "whsec_new", { now }))).toBe("ok");
    expect(reason(() => verifyWebhookSignature(body, header, "whsec_third", { now }))).toBe(
      "signature_mismatch",
    );
  });

  it("a missing or malformed header is rejected as such", () => {
    for (const header of [undefined, "", "garbage", `t=${t}`, `v1=${hmac(secret, t, body)}`, "t=x,v1=00"])
      expect(reason(() => verifyWebhookSignature(body, header, secret, { now }))).toBe("malformed_header");
  });

  it("defaults to the system clock", () => {
    const ts = Math.floor(Date.now() / 1000);
    expect(verifyWebhookSignature(body, `t=${ts},v1=${hmac(secret, ts, body)}`, secret).timestamp).toBe(ts);
    expect(new WebhookSignatureError("malformed_header", "x")).toBeInstanceOf(Error);
  });
});
