import type * as http2 from "node:http2";

/** Node's HTTP/2 header object as WHATWG Headers, pseudo-headers left out. */
export function toHeaders(h: http2.IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const [key, value] of Object.entries(h)) {
    if (key.startsWith(":") || value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.append(key, v);
  }
  return out;
}

/** WHATWG Headers as the plain object node:http2 writes. */
export function headerObject(h: Headers | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  h?.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}

/**
 * A request of the lean paths (unary-transport.ts, unary-handler.ts) keeps its headers here as the plain
 * object HTTP/2 reads and writes, so that a header read or added by tracing on every call costs a
 * property, not a WHATWG Headers built and copied.
 */
export const PLAIN_HEADERS = Symbol("funil.plainHeaders");

type Plain = Record<string, string | string[] | undefined>;
type WithPlain = { header: Headers; [PLAIN_HEADERS]?: Plain };

/** A request's headers as a plain object: the lean path's own, else copied from its Headers. */
export function plainHeaders(req: { header: Headers }): Plain {
  return (req as WithPlain)[PLAIN_HEADERS] ?? headerObject(req.header);
}

/** Adds headers to a request: to the lean path's plain object when it has one, else to its Headers. */
export function addHeaders(req: { header: Headers }, added: Record<string, string>): void {
  const plain = (req as WithPlain)[PLAIN_HEADERS];
  if (plain) Object.assign(plain, added);
  else for (const [key, value] of Object.entries(added)) req.header.set(key, value);
}
