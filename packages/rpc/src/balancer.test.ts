import { describe, expect, it } from "vitest";
import { addressPool, type Member, parseBaseUrls } from "./balancer.js";

interface Fake extends Member {
  up: boolean;
  inFlight: number;
  retired: boolean;
}

const poolOf = (value: string, lookup = async (_: string) => [] as string[], resolveMs = 60_000) => {
  const opened: Fake[] = [];
  const pool = addressPool<Fake>({
    urls: parseBaseUrls(value),
    resolveMs,
    lookup,
    open: (origin) => {
      const m: Fake = {
        address: origin.slice(7),
        up: true,
        inFlight: 0,
        retired: false,
        retire() {
          m.retired = true;
        },
      };
      opened.push(m);
      return m;
    },
  });
  return { pool, opened };
};

describe("balancer: which copy a call goes to", () => {
  it("<NAME>_URL: a comma-separated list of http:// base URLs; anything else is refused", () => {
    expect(parseBaseUrls("http://a:1, http://b:2/").map((u) => u.host)).toEqual(["a:1", "b:2"]);
    expect(() => parseBaseUrls(" , ")).toThrow(/no base URL/);
    expect(() => parseBaseUrls("https://a:1")).toThrow(/http/);
  });

  it("no load: round robin; under load: the copy with the fewest calls in flight", () => {
    const { pool, opened } = poolOf("http://127.0.0.1:1,http://127.0.0.1:2,http://127.0.0.1:3");
    const picks = Array.from({ length: 6 }, () => pool.pick()!.address);
    expect(new Set(picks.slice(0, 3)).size).toBe(3);
    expect(picks.slice(3)).toEqual(picks.slice(0, 3));
    opened[0]!.inFlight = 5;
    opened[1]!.inFlight = 1;
    opened[2]!.inFlight = 3;
    for (let i = 0; i < 5; i++) expect(pool.pick()).toBe(opened[1]);
  });

  it("a copy that is down gets no call while another is up, and the only one left still gets them", () => {
    const { pool, opened } = poolOf("http://[::1]:1,http://127.0.0.1:2");
    expect(opened.map((m) => m.address)).toEqual(["[::1]:1", "127.0.0.1:2"]);
    opened[0]!.up = false;
    for (let i = 0; i < 4; i++) expect(pool.pick()).toBe(opened[1]);
    // A retry that must go elsewhere: none is left but a copy that is down.
    expect(pool.pick(opened[1])).toBe(opened[0]);
    opened[1]!.up = false;
    expect(pool.pick()).toBeDefined();
    const single = poolOf("http://127.0.0.1:3");
    expect(single.pool.pick(single.opened[0])).toBeUndefined();
  });

  it("a host name: its addresses are looked up, new ones join, gone ones retire", async () => {
    let addresses = ["10.0.0.1", "10.0.0.2"];
    const { pool, opened } = poolOf("http://crm:7001", async () => addresses, 50);
    expect(pool.pick()).toBeUndefined();
    await pool.resolving;
    expect(pool.members.map((m) => m.address)).toEqual(["10.0.0.1:7001", "10.0.0.2:7001"]);
    addresses = ["10.0.0.2", "fd00::3"];
    await new Promise((r) => setTimeout(r, 120));
    expect(pool.members.map((m) => m.address)).toEqual(["10.0.0.2:7001", "[fd00::3]:7001"]);
    expect(opened[0]!.retired).toBe(true);
  });
});
