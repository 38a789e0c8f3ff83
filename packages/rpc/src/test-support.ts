// Helpers of this package's tests only (left out of the build: tsconfig.build.json).

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
