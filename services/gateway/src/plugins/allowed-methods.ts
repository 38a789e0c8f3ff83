/**
 * The methods each route pattern answers, so a known path called with another method is a 405 with
 * `Allow` (what HTTP clients expect) rather than a 404.
 */
export function methodTable() {
  const routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];
  return {
    add(methods: string | string[], url: string) {
      const source = url
        .split("/")
        .map((part) =>
          part.startsWith(":") ? "[^/]+" : part === "*" ? ".*" : part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"),
        )
        .join("/");
      const pattern = new RegExp(`^${source}$`);
      let route = routes.find((r) => r.pattern.source === pattern.source);
      if (!route) {
        route = { pattern, methods: new Set() };
        routes.push(route);
      }
      for (const m of [methods].flat()) route.methods.add(m.toUpperCase());
      if (route.methods.has("GET")) route.methods.add("HEAD");
    },
    /** The methods the path answers, empty when no route matches it. */
    allowed(path: string): string[] {
      const methods = new Set<string>();
      for (const r of routes) if (r.pattern.test(path)) for (const m of r.methods) methods.add(m);
      return [...methods].sort();
    },
  };
}
