import { invalid } from "@funil/errors";

/**
 * A query string's parser keeps a percent-encoding it cannot decode as UTF-8 as it was written (`%FF`
 * stays the three characters `%FF`), so a filter would quietly look for text the client never meant:
 * such a parameter is a 400 naming it (`query.query`), as invalid UTF-8 in a body is.
 */
export function refuseUndecodableQuery(url: string): void {
  const at = url.indexOf("?");
  if (at < 0 || !url.includes("%", at)) return;
  for (const pair of url.slice(at + 1).split("&")) {
    const eq = pair.indexOf("=");
    const [name, value] = eq < 0 ? [pair, ""] : [pair.slice(0, eq), pair.slice(eq + 1)];
    for (const part of [name, value]) {
      try {
        decodeURIComponent(part.replaceAll("+", " "));
      } catch {
        const shown = (() => {
          try {
            return decodeURIComponent(name);
          } catch {
            return name;
          }
        })();
        throw invalid([{ path: `query.${shown}`, message: "must be percent-encoded UTF-8" }], "query");
      }
    }
  }
}
