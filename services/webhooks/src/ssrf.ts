import { isIPv4, isIPv6 } from "node:net";

/**
 * Where a webhook may not be sent (docs/api/webhooks.md §Subscription): an address of this machine,
 * of a private network, link-local (where clouds serve instance metadata) or
 * otherwise not a public host. IPv4 and IPv6, with IPv4 hidden in IPv6
 * (mapped, compatible, NAT64) judged as the IPv4 address it carries.
 */
type Range = [base: bigint, bits: number, name: string];

const V4: Array<[string, number, string]> = [
  ["0.0.0.0", 8, "this network"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "shared address space"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local (cloud metadata)"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "IETF protocol assignments"],
  ["192.0.2.0", 24, "documentation"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
];
const V6: Array<[string, number, string]> = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["100::", 64, "discard"],
  ["2001:db8::", 32, "documentation"],
  ["fc00::", 7, "private (unique local)"],
  ["fe80::", 10, "link-local"],
  ["fec0::", 10, "site-local"],
  ["ff00::", 8, "multicast"],
];

function v4ToBig(ip: string): bigint {
  return ip.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

/** The 128 bits of an IPv6 address (any textual form, with or without a trailing dotted IPv4). */
function v6ToBig(ip: string): bigint {
  let text = ip.split("%")[0]!.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = v4ToBig(dotted[1]!);
    text = `${text.slice(0, -dotted[1]!.length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups =
    tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g || "0", 16)), 0n);
}

const ranges = (list: Array<[string, number, string]>, toBig: (ip: string) => bigint): Range[] =>
  list.map(([base, bits, name]) => [toBig(base), bits, name]);
const V4_RANGES = ranges(V4, v4ToBig);
const V6_RANGES = ranges(V6, v6ToBig);

function find(value: bigint, width: number, list: Range[]): string | undefined {
  for (const [base, bits, name] of list) {
    const shift = BigInt(width - bits);
    if (value >> shift === base >> shift) return name;
  }
  return undefined;
}

/**
 * Why an IP address may not receive webhooks ("loopback", "private"…), or
 * undefined for a public address. Anything that is not an IP address is
 * refused too.
 */
export function blockedAddress(ip: string): string | undefined {
  if (isIPv4(ip)) return find(v4ToBig(ip), 32, V4_RANGES);
  if (!isIPv6(ip)) return "not an IP address";
  const value = v6ToBig(ip);
  const low32 = value & 0xffff_ffffn;
  const embedded = (name: string) => {
    const v4 = find(low32, 32, V4_RANGES);
    return v4 && `${v4} (${name})`;
  };
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, deprecated) reach the IPv4 address.
  if (value >> 32n === 0xffffn) return embedded("IPv4-mapped");
  if (value >> 32n === 0n && value > 1n) return embedded("IPv4-compatible") ?? "IPv4-compatible";
  // NAT64 (64:ff9b::/96) translates to the IPv4 address in the low bits.
  if (value >> 32n === 0x0064_ff9b_0000_0000_0000_0000n) return embedded("NAT64");
  return find(value, 128, V6_RANGES);
}
