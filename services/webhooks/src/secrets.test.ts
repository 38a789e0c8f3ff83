import { randomBytes } from "node:crypto";
import { verifyWebhookSignature } from "@funil/webhook-verify";
import { describe, expect, it } from "vitest";
import { newSecret, secretBox, signatureHeader, signingKeys } from "./secrets.js";

describe("webhook secrets (docs/api/webhooks.md §POST /webhooks)", () => {
  it("docs/api/webhooks.md §POST /webhooks: a secret is whsec_ and 32 base62 characters, never the same twice", () => {
    const secrets = new Set(Array.from({ length: 200 }, newSecret));
    expect(secrets.size).toBe(200);
    for (const s of secrets) expect(s).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
  });

  it("docs/api/webhooks.md §POST /webhooks: with WEBHOOK_SECRET_KEY the secret is encrypted at rest (AES-256-GCM) and opens again", () => {
    const box = secretBox(randomBytes(32));
    const secret = newSecret();
    const sealed = box.seal(secret);
    expect(sealed).toMatch(/^enc:v1:/);
    expect(sealed).not.toContain(secret.slice(6));
    expect(box.seal(secret)).not.toBe(sealed);
    expect(box.open(sealed)).toBe(secret);
    // Another key cannot open it, and a tampered value does not open.
    expect(() => secretBox(randomBytes(32)).open(sealed)).toThrow();
    expect(() => box.open(`${sealed.slice(0, -2)}AA`)).toThrow();
    expect(() => secretBox(undefined).open(sealed)).toThrow(/WEBHOOK_SECRET_KEY/);
  });

  it("without a key secrets are stored as they are, and plain ones still open under a key", () => {
    const secret = newSecret();
    expect(secretBox(undefined).seal(secret)).toBe(secret);
    expect(secretBox(randomBytes(32)).open(secret)).toBe(secret);
  });

  it("docs/api/webhooks.md §Signature: the header carries one v1 per signing secret; each verifies", () => {
    const [a, b] = [newSecret(), newSecret()];
    const t = Math.floor(Date.now() / 1000);
    const header = signatureHeader('{"x":1}', t, [a, b]);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verifyWebhookSignature('{"x":1}', header, a).timestamp).toBe(t);
    expect(verifyWebhookSignature('{"x":1}', header, b).timestamp).toBe(t);
  });

  it("docs/api/webhooks.md §Signature: a sealed secret signs through its prepared key as the plain secret does", () => {
    const box = secretBox(randomBytes(32));
    const secret = newSecret();
    const keyOf = signingKeys(box, 2);
    const sealed = box.seal(secret);
    expect(keyOf(sealed)).toBe(keyOf(sealed));
    const t = Math.floor(Date.now() / 1000);
    expect(signatureHeader("{}", t, [keyOf(sealed)])).toBe(signatureHeader("{}", t, [secret]));
    // Full: emptied, and every key still right.
    for (const other of [newSecret(), newSecret(), newSecret()]) keyOf(box.seal(other));
    expect(verifyWebhookSignature("{}", signatureHeader("{}", t, [keyOf(sealed)]), secret).timestamp).toBe(t);
  });
});
