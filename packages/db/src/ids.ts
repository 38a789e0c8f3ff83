import { randomFillSync } from "node:crypto";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"; // Crockford base32, lower-case

/**
 * The random part comes from a pool refilled 4 KiB at a time: one call into
 * the kernel's generator per 256 ids instead of one per id (a fan-out makes
 * thousands a second). Each id takes bytes no other id took.
 */
const pool = Buffer.alloc(4096);
let taken = pool.length;

/**
 * Opaque, prefixed identifiers (`ct_01jd…`): 10 characters of millisecond time
 * then 16 random ones, so ids are unique without coordination and roughly
 * ordered by creation, which keeps index inserts local.
 */
export function newId(prefix: string, now: number = Date.now()): string {
  let time = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  if (taken + 16 > pool.length) {
    randomFillSync(pool);
    taken = 0;
  }
  let rand = "";
  for (let i = taken; i < taken + 16; i++) rand += ALPHABET[pool[i]! % 32];
  taken += 16;
  return `${prefix}_${time}${rand}`;
}
