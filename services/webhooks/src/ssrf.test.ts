import { describe, expect, it } from "vitest";
import { blockedAddress } from "./ssrf.js";

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
    ["0.0.0.0", "this network"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["fe80::1", "link-local"],
    ["fd00:ec2::254", "private (unique local)"],
    ["fc00::1", "private (unique local)"],
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
  ])("a public address is allowed: %s", (ip) => {
    expect(blockedAddress(ip)).toBeUndefined();
  });

  it("something that is not an IP address is refused", () => {
    expect(blockedAddress("localhost")).toBe("not an IP address");
    expect(blockedAddress("")).toBe("not an IP address");
  });
});
