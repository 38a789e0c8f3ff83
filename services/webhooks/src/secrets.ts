import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  type KeyObject,
  randomBytes,
  randomInt,
} from "node:crypto";
import { signWebhook } from "@funil/webhook-verify";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const SEALED = "enc:v1:";

/** A signing secret (docs/api/webhooks.md §Signature): `whsec_` and 32 base62 characters, uniformly random. */
export function newSecret(): string {
  let out = "whsec_";
  for (let i = 0; i < 32; i++) out += BASE62[randomInt(62)];
  return out;
}

/**
 * Secrets at rest: AES-256-GCM under WEBHOOK_SECRET_KEY when it is set
 * (`enc:v1:<iv>.<tag>.<ciphertext>`, base64url), else as they are. A secret
 * must be readable to sign with, so it cannot be hashed like an API key.
 */
export function secretBox(key: Buffer | undefined) {
  return {
    seal(secret: string): string {
      if (!key) return secret;
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const data = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
      return `${SEALED}${[iv, cipher.getAuthTag(), data].map((b) => b.toString("base64url")).join(".")}`;
    },
    open(stored: string): string {
      if (!stored.startsWith(SEALED)) return stored;
      if (!key) throw new Error("a webhook secret is encrypted but WEBHOOK_SECRET_KEY is not set");
      const [iv, tag, data] = stored
        .slice(SEALED.length)
        .split(".")
        .map((p) => Buffer.from(p, "base64url"));
      const decipher = createDecipheriv("aes-256-gcm", key, iv!);
      decipher.setAuthTag(tag!);
      return Buffer.concat([decipher.update(data!), decipher.final()]).toString("utf8");
    },
  };
}
export type SecretBox = ReturnType<typeof secretBox>;

/**
 * The key each stored secret signs with: opened (decrypted, when sealed)
 * and prepared once, not at every attempt. Holds up to `max` keys (all of
 * them are dropped when it is full).
 */
export function signingKeys(box: SecretBox, max = 10_000) {
  const keys = new Map<string, KeyObject>();
  return (stored: string): KeyObject => {
    let key = keys.get(stored);
    if (!key) {
      if (keys.size >= max) keys.clear();
      key = createSecretKey(Buffer.from(box.open(stored), "utf8"));
      keys.set(stored, key);
    }
    return key;
  };
}

/** x-funil-signature (docs/api/webhooks.md §Signature): one v1 per secret that signs, made afresh at each attempt. */
export function signatureHeader(
  body: string,
  unixSeconds: number,
  secrets: Array<string | KeyObject>,
): string {
  let header = `t=${unixSeconds}`;
  for (const s of secrets) header += `,v1=${signWebhook(body, unixSeconds, s)}`;
  return header;
}
