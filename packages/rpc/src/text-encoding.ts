import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";

/**
 * protobuf-es encodes every string field through TextEncoder; Node's Buffer.from writes the same bytes
 * (lone surrogates become U+FFFD alike) in less than half the time for the short strings of our messages,
 * and a list of 50 contacts has hundreds of strings (bench/RESULTS.md).
 * Decoding keeps TextDecoder, which is the faster of the two here. text-encoding.test.ts holds the bytes
 * equal to TextEncoder's for any string.
 */
const standard = getTextEncoding();

export const encodeUtf8 = (text: string) => Buffer.from(text, "utf8") as Uint8Array<ArrayBuffer>;

configureTextEncoding({ ...standard, encodeUtf8 });
