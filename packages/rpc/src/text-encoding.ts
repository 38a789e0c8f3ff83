import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";

/**
 * protobuf-es encodes every string field through TextEncoder, ~700 ns a call for the short strings of our
 * messages; Node's Buffer.from writes the same bytes (lone surrogates become U+FFFD alike) in ~280 ns.
 * A list of 50 contacts has ~750 strings, so crm spent ~7 % of its CPU there (bench/RESULTS.md).
 * Decoding keeps TextDecoder, which is the faster of the two here. text-encoding.test.ts holds the bytes
 * equal to TextEncoder's for any string.
 */
const standard = getTextEncoding();

export const encodeUtf8 = (text: string) => Buffer.from(text, "utf8") as Uint8Array<ArrayBuffer>;

configureTextEncoding({ ...standard, encodeUtf8 });
