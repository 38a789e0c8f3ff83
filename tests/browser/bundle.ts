import { fileURLToPath } from "node:url";
import { rolldown } from "rolldown";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const ENTRY = "\0funil-client-entry";

/**
 * `@funil/client` as a web app's bundler would ship it: resolved by its
 * package name with the browser's conditions, every dependency inlined, one
 * ES module. Any warning fails (an import it could not resolve, such as a
 * `node:` module, would otherwise be left for the browser to choke on).
 */
export async function bundleClient(): Promise<string> {
  const warnings: string[] = [];
  const bundle = await rolldown({
    input: ENTRY,
    cwd: ROOT,
    platform: "browser",
    onwarn: (warning) => warnings.push(`${warning.code}: ${warning.message}`),
    plugins: [
      {
        name: "funil-client-entry",
        resolveId: (id) => (id === ENTRY ? id : undefined),
        load: (id) => (id === ENTRY ? `export * from "@funil/client";` : undefined),
      },
    ],
  });
  const { output } = await bundle.generate({ format: "esm" });
  await bundle.close();
  if (warnings.length) throw new Error(`bundling @funil/client for browsers:\n${warnings.join("\n")}`);
  return output[0].code;
}
