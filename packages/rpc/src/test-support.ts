// Helpers of this package's tests only (left out of the build: tsconfig.build.json).
import { connect, createServer, type Socket } from "node:net";

/**
 * A value with its bytes as plain arrays, so that a Buffer and a Uint8Array of the same bytes compare
 * equal (protobuf-es gives Uint8Array views where the generated codec gives Buffer views).
 */
export const plain = (value: unknown): unknown =>
  ArrayBuffer.isView(value)
    ? Array.from(value as Uint8Array)
    : Array.isArray(value)
      ? value.map(plain)
      : value && typeof value === "object"
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]))
        : value;

/**
 * A TCP proxy in front of a port: counts the connections made through it, and can freeze (stop
 * forwarding in both directions without closing anything, as a frozen process or a network that drops
 * packets would).
 */
export async function tcpProxy(target: number) {
  const sockets: Socket[] = [];
  let connections = 0;
  let frozen = false;
  const server = createServer((inbound) => {
    connections++;
    const outbound = connect(target, "127.0.0.1");
    sockets.push(inbound, outbound);
    for (const s of [inbound, outbound]) s.on("error", () => {});
    inbound.pipe(outbound);
    outbound.pipe(inbound);
    if (frozen) for (const s of [inbound, outbound]) s.pause();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as { port: number }).port,
    get connections() {
      return connections;
    },
    freeze() {
      frozen = true;
      for (const s of sockets) {
        s.unpipe();
        s.pause();
      }
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
