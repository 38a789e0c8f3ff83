import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";

/**
 * protobuf-es encodes every string field through TextEncoder; Node's Buffer.from writes the same bytes
 * (lone surrogates become U+FFFD alike) in less than half the time for the short strings of our messages,
 * and a list of 50 contacts has hundreds of strings (bench/RESULTS.md).
 * Decoding keeps TextDecoder, which is the faster of the two here, but one that keeps a leading U+FEFF:
 * protobuf-es's own drops it as a byte order mark, so a value sent as "\uFEFFJoão" would be stored as
 * "João" by whichever service read it through protobuf-es, and kept whole by the generated codec
 * (codec.ts), which reads strings with Buffer#toString. A string field is data: it is kept as sent.
 * text-encoding.test.ts holds the bytes equal to TextEncoder's for any string, and every string read back.
 */
const standard = getTextEncoding();

export const encodeUtf8 = (text: string) => Buffer.from(text, "utf8") as Uint8Array<ArrayBuffer>;

const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
/** `strict` (proto3 strings): bytes that are not UTF-8 throw, as protobuf-es's own decoder does. */
const strictDecoder = new TextDecoder("utf-8", { ignoreBOM: true, fatal: true });
export const decodeUtf8 = (bytes: Uint8Array, strict?: boolean) =>
  (strict ? strictDecoder : decoder).decode(bytes);

configureTextEncoding({ ...standard, encodeUtf8, decodeUtf8 });
