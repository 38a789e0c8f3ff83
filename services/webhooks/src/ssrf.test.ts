import { describe, expect, it } from "vitest";
import { blockedAddress } from "./ssrf.js";
import { checkTargetUrl } from "./targets.js";

describe("docs/api/webhooks.md §Subscription: webhook targets may not be loopback, private, link-local or metadata addresses", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.10", "private"],
    ["169.254.169.254", "link-local (cloud metadata)"],
    ["100.100.100.200", "shared address space"],
    ["100.64.0.0", "shared address space"],
    ["100.127.255.255", "shared address space"],
    ["0.0.0.0", "this network"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["fe80::1", "link-local"],
    ["fd00:ec2::254", "private (unique local)"],
    ["fc00::1", "private (unique local)"],
    ["fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private (unique local)"],
    ["fe80::1%eth0", "link-local"],
    ["ff02::1", "multicast"],
  ])("IPv4 and IPv6: %s is refused (%s)", (ip, why) => {
    expect(blockedAddress(ip)).toBe(why);
  });

  it.each([
    ["::ffff:127.0.0.1", "loopback (IPv4-mapped)"],
    ["::ffff:7f00:1", "loopback (IPv4-mapped)"],
    ["0:0:0:0:0:ffff:a9fe:a9fe", "link-local (cloud metadata) (IPv4-mapped)"],
    ["::ffff:10.0.0.1", "private (IPv4-mapped)"],
    ["::127.0.0.1", "loopback (IPv4-compatible)"],
    ["64:ff9b::a9fe:a9fe", "link-local (cloud metadata) (NAT64)"],
    ["::ffff:169.254.169.254", "link-local (cloud metadata) (IPv4-mapped)"],
    ["::ffff:0.0.0.0", "this network (IPv4-mapped)"],
    ["::ffff:100.64.0.1", "shared address space (IPv4-mapped)"],
    ["::ffff:0:127.0.0.1", "loopback (IPv4-translated)"],
    ["64:ff9b::", "this network (NAT64)"],
    ["::8.8.8.8", "IPv4-compatible"],
  ])("IPv4 hidden in IPv6: %s is refused as the IPv4 address it carries", (ip, why) => {
    expect(blockedAddress(ip)).toBe(why);
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "172.32.0.1",
    "172.15.255.255",
    "192.169.0.1",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "100.63.255.255",
    "100.128.0.1",
    "fbff:ffff::1",
    "fe00::1",
  ])("a public address is allowed: %s", (ip) => {
    expect(blockedAddress(ip)).toBeUndefined();
  });

  it("something that is not an IP address is refused", () => {
    expect(blockedAddress("localhost")).toBe("not an IP address");
    expect(blockedAddress("")).toBe("not an IP address");
  });

  it("something written the way the URL parser reads as an IP address is judged as that address", () => {
    // 2130706433 is 127.0.0.1 in decimal, 0177 octal, 0x7f hex; 127.1 is 127.0.0.1 short.
    expect(blockedAddress("0177.0.0.1")).toBe("not an IP address");
    expect(blockedAddress("2130706433")).toBe("not an IP address");
  });
});

describe("docs/api/webhooks.md §Subscription: a URL's host in any form the URL parser accepts", () => {
  const policy = { allowHttp: false, allowPrivate: false };
  const noDns = async (host: string): Promise<string[]> => {
    throw new Error(`${host} is an address: no lookup expected`);
  };
  it.each([
    ["https://2130706433/hook", "loopback"],
    ["https://0177.0.0.1/hook", "loopback"],
    ["https://0x7f.1/hook", "loopback"],
    ["https://127.1/hook", "loopback"],
    ["https://0/hook", "this network"],
    ["https://0xa9fea9fe/hook", "link-local (cloud metadata)"],
    ["https://[::ffff:127.0.0.1]/hook", "loopback (IPv4-mapped)"],
    ["https://[::ffff:a9fe:a9fe]/hook", "link-local (cloud metadata) (IPv4-mapped)"],
    ["https://[::]/hook", "unspecified"],
    ["https://[fc00::1]/hook", "private (unique local)"],
  ])("%s is refused (%s) without a DNS lookup", async (url, why) => {
    await expect(checkTargetUrl(url, policy, noDns)).rejects.toMatchObject({
      details: [{ path: "body.url", message: expect.stringContaining(why) }],
    });
  });

  it("a public address in decimal form is allowed", async () => {
    await expect(checkTargetUrl("https://134744072/hook", policy, noDns)).resolves.toBeUndefined();
  });
});
