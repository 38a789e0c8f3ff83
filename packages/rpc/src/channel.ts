/**
 * The batch channel: one long-lived HTTP/2 stream per client session that carries the batches of
 * unary-transport.ts as length-prefixed frames, answered on the same stream in any order: a stream costs
 * both ends far more CPU in Node's HTTP/2 core than a frame on a stream already open (bench/RESULTS.md
 * has the figures). Internal to packages/rpc: other clients use the
 * BatchService or single calls, which the server keeps answering.
 *
 * A request frame is [u32 id][u32 length][a BatchService CallRequest], an answer [u32 id][u16 status]
 * [u32 length][body]: a CallResponse when the status is 200, the Connect protocol's JSON error
 * otherwise (the batch as a whole failed: it did not parse, or the service is stopping and did not run
 * it). The server answers every frame it has read before it ends the stream, so a frame the client has
 * no answer for when the stream ends was never run.
 */
export const CHANNEL_PATH = "/funil.rpc.v1.BatchService/Channel";

export interface Frame {
  id: number;
  /** 200 for a request frame. */
  status: number;
  body: Buffer;
}

export function requestFrame(id: number, body: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(8 + body.byteLength);
  frame.writeUInt32BE(id, 0);
  frame.writeUInt32BE(body.byteLength, 4);
  frame.set(body, 8);
  return frame;
}

export function answerFrame(id: number, status: number, body: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(10 + body.byteLength);
  frame.writeUInt32BE(id, 0);
  frame.writeUInt16BE(status, 4);
  frame.writeUInt32BE(body.byteLength, 6);
  frame.set(body, 10);
  return frame;
}

/**
 * Cuts the frames out of a stream's chunks, whatever their boundaries (a frame's chunks are joined once).
 * A frame whose header announces a body longer than `max` is not read: the reader stops there and
 * `oversized` names it, so that its sender may be answered without its body ever being held.
 */
export class FrameReader {
  private pending: Buffer[] = [];
  private size = 0;
  /** The length of the frame being read (header included), once its header is in. */
  private needed = 0;
  /** The first frame over the limit; nothing from it on is read. */
  oversized: { id: number; length: number } | undefined;

  /** `answers`: frames with a status (the client's side) or without (the server's). */
  constructor(
    private readonly answers: boolean,
    private readonly max: number,
  ) {}

  /** Adds a chunk and returns the frames it completes, up to the first one over the limit. */
  push(chunk: Buffer): Frame[] {
    if (this.oversized) return [];
    this.pending.push(chunk);
    this.size += chunk.length;
    const head = this.answers ? 10 : 8;
    const frames: Frame[] = [];
    while (this.size >= head) {
      if (this.needed === 0) {
        if (this.pending[0]!.length < head) this.pending = [Buffer.concat(this.pending, this.size)];
        const length = this.pending[0]!.readUInt32BE(this.answers ? 6 : 4);
        if (length > this.max) {
          this.oversized = { id: this.pending[0]!.readUInt32BE(0), length };
          this.pending = [];
          this.size = 0;
          break;
        }
        this.needed = head + length;
      }
      if (this.size < this.needed) break;
      const buf = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.size);
      frames.push({
        id: buf.readUInt32BE(0),
        status: this.answers ? buf.readUInt16BE(4) : 200,
        body: buf.subarray(head, this.needed),
      });
      const rest = buf.subarray(this.needed);
      this.pending = rest.length > 0 ? [rest] : [];
      this.size = rest.length;
      this.needed = 0;
    }
    return frames;
  }
}

/** The id after `id`: 1 … 2^32 − 1, then 1 again (a frame id is a u32 and 0 is never used). */
export const nextFrameId = (id: number) => (id >= 0xffffffff ? 1 : id + 1);
