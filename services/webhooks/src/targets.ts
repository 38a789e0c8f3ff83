import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { invalid } from "@funil/errors";
import { blockedAddress } from "./ssrf.js";

export interface TargetPolicy {
  /** WEBHOOK_ALLOW_HTTP: http:// besides https:// (tests and local development). */
  allowHttp: boolean;
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS: loopback and private addresses too. */
  allowPrivate: boolean;
}

export type Resolve = (host: string) => Promise<string[]>;
export const resolveAll: Resolve = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** A URL's host as an address or a name (IPv6 literals lose their brackets). */
export const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, "");

/**
 * Why a host's addresses may not receive webhooks, or undefined. A name is
 * judged by every address it resolves to: one private address is enough to
 * refuse it (a receiver cannot pick which one a connection uses).
 */
export async function blockedHost(host: string, resolve: Resolve = resolveAll): Promise<string | undefined> {
  const addresses = isIP(host) ? [host] : await resolve(host);
  for (const address of addresses) {
    const why = blockedAddress(address);
    if (why) return `${host} is ${isIP(host) ? "" : `${address}, `}${why}`;
  }
  return undefined;
}

/**
 * The check of a subscription's URL at create and PATCH (docs/api/webhooks.md §Subscription): https
 * (or http when allowed), and a host that resolves only to public addresses
 * (unless private targets are allowed). Each attempt checks again, on the
 * address it connects to (delivery.ts), since DNS can change.
 */
export async function checkTargetUrl(
  value: string,
  policy: TargetPolicy,
  resolve: Resolve = resolveAll,
): Promise<void> {
  const refuse = (message: string) => invalid([{ path: "body.url", message }], "body");
  const url = new URL(value);
  if (url.protocol !== "https:" && !(policy.allowHttp && url.protocol === "http:"))
    throw refuse("url must use https");
  if (url.username || url.password) throw refuse("url may not carry credentials");
  if (policy.allowPrivate) return;
  let why: string | undefined;
  try {
    why = await blockedHost(hostOf(url), resolve);
  } catch {
    throw refuse(`the host ${url.hostname} does not resolve`);
  }
  if (why) throw refuse(`url points to a disallowed address: ${why}`);
}
