import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
export const KEY_PREFIX = "fnl_";
export const KEY_PATTERN = /^fnl_[0-9A-Za-z]{40}$/;

export const SCOPES = [
  "contacts.read",
  "contacts.write",
  "opportunities.read",
  "opportunities.write",
  "calendars.read",
  "calendars.write",
  "tasks.read",
  "tasks.write",
  "interactions.read",
  "members.read",
  "webhooks.manage",
  "platform.read",
  "audit.read",
] as const;
export type Scope = (typeof SCOPES)[number];

/** Uniform base62 characters (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += BASE62[b % 62];
    }
  }
  return out;
}

/** A new key: `fnl_` + 40 base62 characters (docs/api/conventions.md §Authentication and API keys). */
export const generateKey = () => `${KEY_PREFIX}${randomBase62(40)}`;

export const hashKey = (key: string) => createHash("sha256").update(key).digest("hex");

/** Constant-time comparison of two hex digests. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && timingSafeEqual(x, y);
}

export function sameSecret(given: string, expected: string): boolean {
  return sameHash(hashKey(given), hashKey(expected));
}
