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
