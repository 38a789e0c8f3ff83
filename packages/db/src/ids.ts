import { randomFillSync } from "node:crypto";

const ALPHABET = Buffer.from("0123456789abcdefghjkmnpqrstvwxyz"); // Crockford base32, lower-case

/**
 * The random part comes from a pool refilled 4 KiB at a time: one call into
 * the kernel's generator per 256 ids instead of one per id (a fan-out makes
 * thousands a second). Each id takes bytes no other id took.
 */
const pool = Buffer.alloc(4096);
let taken = pool.length;

/**
 * An id's characters are written into one buffer and read out as a single
 * string: built one character at a time, an id cost 26 intermediate strings
 * (about 0.5 KB of garbage, at thousands of ids a second in a fan-out).
 */
const out = Buffer.alloc(64);

/**
 * Opaque, prefixed identifiers (`ct_01jd…`): 10 characters of millisecond time
 * then 16 random ones, so ids are unique without coordination and roughly
 * ordered by creation, which keeps index inserts local.
 */
export function newId(prefix: string, now: number = Date.now()): string {
  if (prefix.length > 32) throw new Error(`an id prefix is short: ${prefix.slice(0, 40)}…`);
  const start = out.write(prefix, "latin1");
  out[start] = 0x5f; // "_"
  let t = now;
  for (let i = start + 10; i > start; i--) {
    out[i] = ALPHABET[t % 32]!;
    t = Math.floor(t / 32);
  }
  if (taken + 16 > pool.length) {
    randomFillSync(pool);
    taken = 0;
  }
  for (let i = 0; i < 16; i++) out[start + 11 + i] = ALPHABET[pool[taken + i]! % 32]!;
  taken += 16;
  return out.toString("latin1", 0, start + 27);
}
