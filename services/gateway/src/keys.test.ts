import { describe, expect, it } from "vitest";
import { generateKey, hashKey, KEY_PATTERN, sameHash, sameSecret } from "./keys.js";

describe("API keys (docs/api/conventions.md §Authentication and API keys)", () => {
  it("are fnl_ + 40 base62 characters, all different", () => {
    const keys = Array.from({ length: 200 }, generateKey);
    for (const k of keys) expect(k).toMatch(KEY_PATTERN);
    expect(new Set(keys).size).toBe(200);
  });
  it("are stored as SHA-256 and compared in constant time", () => {
    const k = generateKey();
    expect(hashKey(k)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashKey(k)).not.toContain(k.slice(4));
    expect(sameHash(hashKey(k), hashKey(k))).toBe(true);
    expect(sameHash(hashKey(k), hashKey(generateKey()))).toBe(false);
    expect(sameHash(hashKey(k), "abcd")).toBe(false);
    expect(sameSecret("token-1", "token-1")).toBe(true);
    expect(sameSecret("token-1", "token-2")).toBe(false);
  });
});
