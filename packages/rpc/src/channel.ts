/**
 * The batch channel (BatchService.Channel, proto/funil/rpc/v1/batch.proto): one long-lived HTTP/2 stream
 * per client session that carries the batches of unary-transport.ts, answered on the same stream in any
 * order: a stream costs both ends far more CPU in Node's HTTP/2 core than a message on a stream already
 * open (bench/RESULTS.md has the figures). A Connect bidirectional stream: each ChannelRequest and
 * ChannelResponse in the protocol's envelope ([u8 flags][u32 length][message]), and the service's side
 * ended by the end-of-stream envelope (flags 0x02, a JSON body). The server answers every request it has
 * read before it ends the stream, so a request the client has no answer for when the stream ends never
 * ran.
 */
export const CHANNEL_PATH = "/funil.rpc.v1.BatchService/Channel";

export const CHANNEL_CONTENT_TYPE = "application/connect+proto";

/** An envelope's flags: a compressed message (never sent here), the end of the stream. */
export const COMPRESSED = 0x01;
export const END_STREAM = 0x02;

export interface Envelope {
  flags: number;
  body: Buffer;
}

export function envelope(flags: number, body: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + body.byteLength);
  out.writeUInt8(flags, 0);
  out.writeUInt32BE(body.byteLength, 1);
  out.set(body, 5);
  return out;
}

/** The end of the service's side: `{}`, or the error that ended the stream (the Connect protocol's JSON). */
export const endStream = (error?: unknown) =>
  envelope(END_STREAM, Buffer.from(JSON.stringify(error === undefined ? {} : { error })));

/**
 * Cuts the envelopes out of a stream's chunks, whatever their boundaries (an envelope's chunks are joined
 * once). One whose header announces a body longer than `max` is not read: the reader stops there and
 * `oversized` gives its length, so that the stream may be ended without its body ever being held.
 */
export class EnvelopeReader {
  private pending: Buffer[] = [];
  private size = 0;
  /** The length of the envelope being read (header included), once its header is in. */
  private needed = 0;
  /** The length of the first envelope over the limit; nothing from it on is read. */
  oversized: number | undefined;

  constructor(private readonly max: number) {}

  /** Adds a chunk and returns the envelopes it completes, up to the first one over the limit. */
  push(chunk: Buffer): Envelope[] {
    if (this.oversized !== undefined) return [];
    this.pending.push(chunk);
    this.size += chunk.length;
    const out: Envelope[] = [];
    while (this.size >= 5) {
      if (this.needed === 0) {
        if (this.pending[0]!.length < 5) this.pending = [Buffer.concat(this.pending, this.size)];
        const length = this.pending[0]!.readUInt32BE(1);
        if (length > this.max) {
          this.oversized = length;
          this.pending = [];
          this.size = 0;
          break;
        }
        this.needed = 5 + length;
      }
      if (this.size < this.needed) break;
      const buf = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.size);
      out.push({ flags: buf.readUInt8(0), body: buf.subarray(5, this.needed) });
      const rest = buf.subarray(this.needed);
      this.pending = rest.length > 0 ? [rest] : [];
      this.size = rest.length;
      this.needed = 0;
    }
    return out;
  }
}

/** The id after `id`: 1 … 2^32 − 1, then 1 again (an id is a uint32 and 0 is never used). */
export const nextFrameId = (id: number) => (id >= 0xffffffff ? 1 : id + 1);
