import { BlockList, isIPv4, isIPv6 } from "node:net";

/**
 * Where a webhook may not be sent (docs/api/webhooks.md §Subscription): an address of this machine,
 * of a private network, link-local (where clouds serve instance metadata) or
 * otherwise not a public host. IPv4 and IPv6, with IPv4 hidden in IPv6
 * (mapped, translated, compatible, NAT64) judged as the IPv4 address it carries.
 */
type Family = "ipv4" | "ipv6";
type Named = [name: string, subnets: string[]];

const V4: Named[] = [
  ["this network", ["0.0.0.0/8"]],
  ["private", ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]],
  ["shared address space", ["100.64.0.0/10"]],
  ["loopback", ["127.0.0.0/8"]],
  ["link-local (cloud metadata)", ["169.254.0.0/16"]],
  ["IETF protocol assignments", ["192.0.0.0/24"]],
  ["documentation", ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"]],
  ["benchmarking", ["198.18.0.0/15"]],
  ["multicast", ["224.0.0.0/4"]],
  ["reserved", ["240.0.0.0/4"]],
];
const V6: Named[] = [
  ["unspecified", ["::/128"]],
  ["loopback", ["::1/128"]],
  ["discard", ["100::/64"]],
  ["documentation", ["2001:db8::/32"]],
  ["private (unique local)", ["fc00::/7"]],
  ["link-local", ["fe80::/10"]],
  ["site-local", ["fec0::/10"]],
  ["multicast", ["ff00::/8"]],
];
/** IPv6 ranges whose low 32 bits are an IPv4 address that the packet reaches. */
const EMBEDDING: Named[] = [
  ["IPv4-mapped", ["::ffff:0:0/96"]],
  ["IPv4-translated", ["::ffff:0:0:0/96"]],
  ["IPv4-compatible", ["::/96"]],
  ["NAT64", ["64:ff9b::/96"]],
];

function blockLists(family: Family, named: Named[]): Array<[string, BlockList]> {
  return named.map(([name, subnets]) => {
    const list = new BlockList();
    for (const subnet of subnets) {
      const [base, bits] = subnet.split("/") as [string, string];
      list.addSubnet(base, Number(bits), family);
    }
    return [name, list];
  });
}
const V4_LISTS = blockLists("ipv4", V4);
const V6_LISTS = blockLists("ipv6", V6);
const EMBEDDING_LISTS = blockLists("ipv6", EMBEDDING);

const nameOf = (ip: string, family: Family, lists: Array<[string, BlockList]>) =>
  lists.find(([, list]) => list.check(ip, family))?.[0];

/**
 * The IPv4 address in the low 32 bits of an IPv6 address. The URL parser writes the address in its
 * canonical form (hex groups, `::` for the longest run of zeros), whose last two groups are those
 * bits; an empty group is zeros.
 */
function lowIPv4(ip: string): string {
  const groups = new URL(`http://[${ip}]/`).hostname.slice(1, -1).split(":");
  const [high, low] = groups.slice(-2).map((g) => Number.parseInt(g || "0", 16)) as [number, number];
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/**
 * Why an IP address may not receive webhooks ("loopback", "private"…), or
 * undefined for a public address. Anything that is not an IP address is
 * refused too.
 */
export function blockedAddress(address: string): string | undefined {
  if (isIPv4(address)) return nameOf(address, "ipv4", V4_LISTS);
  const ip = address.split("%")[0]!;
  if (!isIPv6(ip)) return "not an IP address";
  // ::ffff:0:0/96 and the others reach an IPv4 address: judged as that address. `::` and `::1` lie
  // inside ::/96 (compatible) but are IPv6's own unspecified and loopback addresses.
  const own = nameOf(ip, "ipv6", V6_LISTS.slice(0, 2));
  if (own) return own;
  const embedding = nameOf(ip, "ipv6", EMBEDDING_LISTS);
  if (embedding) {
    const v4 = nameOf(lowIPv4(ip), "ipv4", V4_LISTS);
    if (v4) return `${v4} (${embedding})`;
    // The deprecated compatible form has no public use: refused whatever it carries.
    return embedding === "IPv4-compatible" ? embedding : undefined;
  }
  return nameOf(ip, "ipv6", V6_LISTS);
}
