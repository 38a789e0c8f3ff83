import * as http2 from "node:http2";
import {
  create,
  type DescMessage,
  type DescMethodUnary,
  isMessage,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import {
  Code,
  ConnectError,
  type ContextValues,
  createContextValues,
  type Interceptor,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { codeFromHttpStatus, errorFromJsonBytes } from "@connectrpc/connect/protocol-connect";
import { ANSWER_AS_API_JSON, apiJsonOfBinary, apiJsonText } from "./api-json-binary.js";
import { type AddressPool, addressPool, type Lookup, type Member, parseBaseUrls } from "./balancer.js";
import {
  BATCH_PATH,
  type BatchResultWire,
  type ChannelResponseWire,
  channelRequestOf,
  decodeBatchResponse,
  decodeChannelResponse,
  encodeBatchRequest,
  ID_BYTES,
} from "./batch-codec.js";
import {
  CHANNEL_CONTENT_TYPE,
  CHANNEL_PATH,
  END_STREAM,
  EnvelopeReader,
  envelope,
  nextFrameId,
} from "./channel.js";
import { codecOf } from "./codec.js";
import { tooLarge } from "./errors.js";
import { flowSettings, widenSessionWindow } from "./flow.js";
import { headerObject, PLAIN_HEADERS, toHeaders } from "./headers.js";

/**
 * The Connect protocol's unary call (a POST of the binary message, the answer's status and body) straight
 * on node:http2. connect-node's transport does the same with, per call, two AbortControllers and the
 * DOMException of aborting one when the call ends, WHATWG Headers for both directions, async iterables
 * for a one-message body and a deadline timer linked through abort events: measured in bench/, that was
 * a fifth of the gateway's CPU per read. Here a call costs one stream and one timer; Headers objects are
 * made only when an interceptor or an error reads them. The calls are spread over the copies of the
 * service (balanced()). Unary only: no method the services' clients call streams (grpc.health.v1's
 * Watch is for other clients), so a streaming call fails Unimplemented instead of costing every client
 * a second transport.
 */
export function createUnaryTransport(opts: TransportOptions): Transport {
  const urls = parseBaseUrls(opts.baseUrl);
  const exchange = balanced(urls, opts);
  const origin = urls[0]!.href.replace(/\/$/, "");

  return {
    async unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: ConstructorParameters<typeof Headers>[0],
      input: MessageInitShape<I>,
      contextValues?: ContextValues,
    ): Promise<UnaryResponse<I, O>> {
      const path = `/${method.parent.typeName}/${method.name}`;
      const deadline = timeoutMs ?? opts.defaultTimeoutMs;
      const safe = method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
      const req = new ClientRequest<I, O>(
        method,
        origin + path,
        signal ?? NEVER,
        header,
        contextValues ?? createContextValues(),
        // The caller's init shape as is when the generated encoder writes it (create() walked the descriptor
        // for every call); interceptors here read only the method.
        (isMessage(input, method.input) || codecOf(method.input).kind === "generated"
          ? input
          : create(method.input, input)) as MessageShape<I>,
      );
      const send = async (r: UnaryRequest<I, O>): Promise<UnaryResponse<I, O>> => {
        const extra = req.sentHeaders();
        const body = codecOf(method.input).encode(r.message);
        if (body.byteLength > opts.maxMessageBytes)
          throw tooLarge("request", body.byteLength, opts.maxMessageBytes);
        const answer = await exchange(path, body, deadline, r.signal, extra, safe);
        return responseOf(method, answer, r.contextValues.get(ANSWER_AS_API_JSON));
      };
      const run = opts.interceptors.reduceRight<Next>(
        (next, interceptor) => interceptor(next),
        send as unknown as Next,
      );
      return (await run(req)) as UnaryResponse<I, O>;
    },
    stream: (method) =>
      Promise.reject(
        new ConnectError(
          `${method.parent.typeName}/${method.name} streams: this transport is unary only`,
          Code.Unimplemented,
        ),
      ),
  };
}

/**
 * A call's UnaryRequest. What the interceptors add without reading the Headers (tracing's traceparent)
 * goes to its plain headers, as sent; the WHATWG Headers are made only when an interceptor reads them. A
 * class: V8 builds an object literal with a getter on a slow path (bench/RESULTS-rpc-calls.md).
 */
class ClientRequest<I extends DescMessage, O extends DescMessage> implements UnaryRequest<I, O> {
  readonly stream = false;
  readonly requestMethod = "POST";
  readonly service: DescMethodUnary<I, O>["parent"];
  readonly [PLAIN_HEADERS]: Record<string, string> = {};
  /** The Headers, once read. */
  #headers: Headers | undefined;
  constructor(
    readonly method: DescMethodUnary<I, O>,
    readonly url: string,
    readonly signal: AbortSignal,
    private readonly given: ConstructorParameters<typeof Headers>[0],
    readonly contextValues: ContextValues,
    readonly message: MessageShape<I>,
  ) {
    this.service = method.parent;
  }
  get header() {
    this.#headers ??= new Headers(this.given);
    return this.#headers;
  }
  /** What the call sends: the caller's headers as the interceptors left them, and the plain ones added. */
  sentHeaders(): Record<string, string> {
    const plain = this[PLAIN_HEADERS];
    if (!this.#headers && !this.given) return plain;
    return { ...headerObject(this.header), ...plain };
  }
}

/** A call's UnaryResponse; its Headers are made only for an interceptor that reads them. */
class ClientResponse<I extends DescMessage, O extends DescMessage> implements UnaryResponse<I, O> {
  readonly stream = false;
  readonly service: DescMethodUnary<I, O>["parent"];
  constructor(
    readonly method: DescMethodUnary<I, O>,
    readonly message: MessageShape<O>,
    private readonly headers: http2.IncomingHttpHeaders,
  ) {
    this.service = method.parent;
  }
  get header() {
    return toHeaders(this.headers);
  }
  get trailer() {
    return new Headers();
  }
}

/** A call's answer as the interceptors and the client see it, or its error. */
function responseOf<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  answer: Answer,
  asApiJson: boolean,
): UnaryResponse<I, O> {
  if (answer.status !== 200) throw errorOf(answer);
  if (answer.headers["content-type"] !== "application/proto")
    throw new ConnectError(`unexpected content-type ${answer.headers["content-type"]}`, Code.Internal);
  return new ClientResponse(
    method,
    asApiJson
      ? (apiJsonText(apiJsonOfBinary(method.output)(answer.body)) as unknown as MessageShape<O>)
      : codecOf(method.output).decode(answer.body),
    answer.headers,
  );
}

/** What a client's transport is built with (rpcClient's options, and the caller's deadline). */
export interface TransportOptions {
  /** One base URL, several separated by commas, or a host name that resolves to several addresses. */
  baseUrl: string;
  defaultTimeoutMs: number;
  interceptors: Interceptor[];
  /** A connection without traffic for this long is closed. */
  idleTimeoutMs: number;
  /** How often a host name is looked up again. */
  resolveMs: number;
  /** PING interval of a connection; no answer within it: the connection is dead. */
  keepaliveMs: number;
  lookup: Lookup;
  /** The service, as /metrics labels its calls per address. */
  name: string;
  /** RPC_MAX_MESSAGE_BYTES: a longer request is refused before it is sent, a longer answer as it comes. */
  maxMessageBytes: number;
}

type Next = Parameters<Interceptor>[0];

/** A signal for calls made without one: nothing ever aborts it. */
const NEVER = new AbortController().signal;

interface Answer {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: Uint8Array;
}

type Exchange = (
  path: string,
  body: Uint8Array,
  timeoutMs: number,
  signal: AbortSignal,
  extra: Record<string, string> | undefined,
  /** A read (NO_SIDE_EFFECTS): retried on another copy whatever broke. */
  safe: boolean,
) => Promise<Answer>;

/**
 * Unary calls made by this process's clients, the batches that carried them, and the HTTP/2 streams
 * opened (a single call's, a batch's of its own, a channel's, which carries many batches): the gateway's
 * /metrics shows all three, so the saving of batching under load can be seen.
 */
export const rpcClientStats = { calls: 0, batches: 0, streams: 0 };

/** Calls sent to one address of one service (a retry on another copy counts at both). */
export interface AddressStat {
  service: string;
  address: string;
  calls: number;
}
const addressStats = new Map<string, AddressStat>();

/** Every address this process's clients have sent calls to, with their counts (the gateway's /metrics). */
export const rpcAddressStats = (): Iterable<AddressStat> => addressStats.values();

function addressStat(service: string, address: string): AddressStat {
  const key = `${service} ${address}`;
  let stat = addressStats.get(key);
  if (!stat) {
    stat = { service, address, calls: 0 };
    addressStats.set(key, stat);
  }
  return stat;
}

/** The most calls sent in one batch; more calls of one turn go in several. */
const BATCH_SIZE = 64;

/** Copies one call may be sent to, the first included. */
const MAX_TRIES = 3;

/**
 * Calls spread over the copies of a service (balancer.ts picks one per call, so that the calls of one turn
 * split evenly and each copy still gets them as one batch), and sent again when that is safe: a call that
 * certainly never ran (the connection refused, the stream refused or above a GOAWAY's last stream, a
 * channel frame the service answered or ended without running) on any copy, a read whose call broke in
 * any other way on another copy. A call the service answered, even Unavailable, is its caller's to retry
 * (the retryUnavailable interceptor, for reads).
 */
function balanced(urls: URL[], opts: TransportOptions): Exchange {
  const failed = (p: Pending, from: Copy, err: unknown) => {
    if (p.guard.settled) return;
    if (p.tries < MAX_TRIES && err instanceof ConnectError && err.code === Code.Unavailable) {
      // Never ran: another copy, or the same one when it is the only one (a GOAWAY ended a connection,
      // not the copy; a refused one fails again at once).
      const to = neverRan.has(err) ? (pool.pick(from) ?? from) : p.safe ? pool.pick(from) : undefined;
      if (to) {
        p.tries++;
        to.send(p);
        return;
      }
    }
    p.guard.reject(err);
  };
  const pool: AddressPool<Copy> = addressPool({
    urls,
    resolveMs: opts.resolveMs,
    lookup: opts.lookup,
    open: (origin) => copyOf(origin, opts, failed),
  });
  const dispatch = (p: Pending) => {
    const copy = pool.pick();
    if (copy) copy.send(p);
    else if (pool.resolving) {
      // The deadline runs while the host name is looked up.
      if (p.guard.arm()) pool.resolving.then(() => dispatchResolved(p));
    } else dispatchResolved(p);
  };
  const dispatchResolved = (p: Pending) => {
    if (p.guard.settled) return;
    const copy = pool.pick();
    if (copy) copy.send(p);
    else p.guard.reject(unavailable(new Error(`no address found for ${opts.baseUrl}`)));
  };
  return (path, body, timeoutMs, signal, extra, safe) =>
    new Promise<Answer>((resolve, reject) => {
      rpcClientStats.calls++;
      dispatch({
        path,
        body,
        timeoutMs,
        signal,
        extra,
        safe,
        tries: 1,
        guard: new Guard(timeoutMs, signal, resolve, reject),
      });
    });
}

/** One copy of a service: its connection, its batch channel, its calls in flight, whether it is up. */
interface Copy extends Member {
  inFlight: number;
  /** Sends a call with the others of this turn (its guard settles it; a failure goes back to the pool). */
  send(p: Pending): void;
}

/** After a refused or broken connection, a copy is probed again after this, doubling up to the most. */
const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 2000;

function copyOf(
  origin: string,
  opts: TransportOptions,
  failed: (p: Pending, from: Copy, err: unknown) => void,
): Copy {
  const address = origin.slice("http://".length);
  const stat = addressStat(opts.name, address);
  let up = true;
  let retired = false;
  let backoff = 0;
  let probe: NodeJS.Timeout | undefined;
  const sessions = sessionPool(origin, opts, {
    connected() {
      up = true;
      backoff = 0;
    },
    // Calls go to the other copies meanwhile; the probe is a new connection, no call is risked on it.
    broken() {
      up = false;
      if (probe || retired) return;
      backoff = Math.min(backoff ? backoff * 2 : FIRST_BACKOFF_MS, MAX_BACKOFF_MS);
      probe = setTimeout(() => {
        probe = undefined;
        if (!retired) sessions.get();
      }, backoff).unref();
    },
  });
  const copy: Copy = {
    address,
    get up() {
      return up;
    },
    inFlight: 0,
    send(p) {
      copy.inFlight++;
      stat.calls++;
      queue.send(p);
    },
    retire() {
      retired = true;
      clearTimeout(probe);
      queue.retire();
      sessions.close();
    },
  };
  const queue = new CopyQueue(
    sessions.get,
    { idleTimeoutMs: opts.idleTimeoutMs, maxBytes: opts.maxMessageBytes },
    {
      resolve(p, answer) {
        copy.inFlight--;
        p.guard.resolve(answer);
      },
      reject(p, err) {
        copy.inFlight--;
        failed(p, copy, err);
      },
    },
  );
  return copy;
}

/** How a copy's calls end: an answer, or a failure its pool may send elsewhere. */
interface Outcome {
  resolve(p: Pending, answer: Answer): void;
  reject(p: Pending, err: unknown): void;
}

/** What a copy's queue needs to know of the transport's options. */
interface QueueLimits {
  /** The channel is ended after this long without traffic. */
  idleTimeoutMs: number;
  /** RPC_MAX_MESSAGE_BYTES: a request frame's longest, each answer's longest. */
  maxBytes: number;
}

/** The longest answer a batch's stream or frame may carry: each of its results may be as long as the limit. */
const answerLimit = (maxBytes: number) => Math.min(maxBytes * BATCH_SIZE, 0xffffffff);

/**
 * The calls made in one turn of the event loop (all the requests the gateway read from its sockets at
 * once, each calling this service) leave together, as one frame on the session's batch channel
 * (channel.ts: one long-lived stream), answered by the service's BatchService exactly as if each had come
 * alone. A stream costs both ends far more CPU than the few bytes of a call (bench/RESULTS.md), so
 * under load the cost per call falls with the batch, and with no load nothing waits: the batch leaves at
 * the end of the turn that made it. Each call keeps its own deadline, cancellation, headers and answer; a
 * batch that fails as a whole (the service unreachable, the channel broken) fails each of its calls the
 * same way, so the retry rules apply per call. A service without the channel gets one stream per batch
 * (the BatchService's Call), and one without BatchService (an older copy during a rolling deploy) single
 * calls, from then on. One per copy of the service.
 */
class CopyQueue {
  private queue: Pending[] = [];
  /** The service answers BatchService. */
  private batching = true;
  /** The service answers the batch channel. */
  private channels = true;
  private channel: Channel | undefined;
  private retired = false;

  constructor(
    private readonly session: () => http2.ClientHttp2Session,
    private readonly limits: QueueLimits,
    private readonly outcome: Outcome,
  ) {}

  send(p: Pending) {
    if (this.queue.length === 0) setImmediate(this.flush);
    this.queue.push(p);
  }

  /** The copy left the pool: its channel ends once its frames are answered. */
  retire() {
    this.retired = true;
    if (this.channel && !this.channel.closed) this.channel.stream.end();
  }

  private readonly flush = () => {
    const calls = this.queue;
    this.queue = [];
    if (this.retired) {
      // Queued before the copy left the pool, sent nowhere yet: another copy takes them.
      this.rejectAll(calls, unavailable(new Error("the copy left the service's addresses"), true));
      return;
    }
    if (!this.batching || (calls.length === 1 && !this.channels)) {
      for (const p of calls) this.single(p);
      return;
    }
    for (let i = 0; i < calls.length; i += BATCH_SIZE) {
      const live = calls.slice(i, i + BATCH_SIZE).filter(this.armed);
      if (live.length > 0) this.sendBatch(live);
    }
  };

  /** A call alone on its stream (its deadline is the stream's). */
  private single(p: Pending) {
    call(this.session(), p, this.limits.maxBytes).then(
      (answer) => this.outcome.resolve(p, answer),
      (err) => this.outcome.reject(p, err),
    );
  }

  /** Starts a call's deadline; a call cancelled before it left is over (its guard failed it Canceled). */
  private readonly armed = (p: Pending) => {
    if (p.guard.arm()) return true;
    this.outcome.reject(p, undefined);
    return false;
  };

  private rejectAll(live: Pending[], err: unknown) {
    for (const p of live) this.outcome.reject(p, err);
  }

  /**
   * A batch, as a frame on the channel or on a stream of its own, never longer than RPC_MAX_MESSAGE_BYTES
   * (the service refuses a longer one): a batch that would be is split in halves, and a call too long to
   * share one goes alone.
   */
  private sendBatch(live: Pending[]) {
    const bytes = batchOf(live);
    if (bytes.byteLength + ID_BYTES > this.limits.maxBytes) {
      if (live.length === 1) {
        if (live[0]!.guard.disarm()) this.single(live[0]!);
        return;
      }
      const half = Math.ceil(live.length / 2);
      this.sendBatch(live.slice(0, half));
      this.sendBatch(live.slice(half));
      return;
    }
    if (this.channels) this.sendOnChannel(live, bytes);
    else this.sendOnStream(live, bytes);
  }

  /** A batch on a stream of its own (BatchService.Call). */
  private sendOnStream(live: Pending[], bytes: Uint8Array) {
    rpcClientStats.batches++;
    const timeoutMs = Math.max(...live.map((p) => p.timeoutMs));
    const batch = { path: BATCH_PATH, body: bytes, timeoutMs, signal: NEVER, extra: undefined };
    call(this.session(), batch, answerLimit(this.limits.maxBytes)).then(
      (answer) => this.settle(live, answer),
      (err) => this.rejectAll(live, err),
    );
  }

  /** A batch as a frame on the channel, opened on first use and again once it ends. */
  private sendOnChannel(live: Pending[], bytes: Uint8Array) {
    rpcClientStats.batches++;
    const s = this.session();
    let c = this.channel;
    if (!c || c.session !== s || c.closed) {
      // A channel left on a closing session ends too, once its frames are answered.
      if (c && !c.closed) c.stream.end();
      try {
        c = this.channel = openChannel(s, this.limits, this.channelEvents);
      } catch (err) {
        // The session went away meanwhile: nothing left.
        this.rejectAll(live, unavailable(err, true));
        return;
      }
    }
    const id = c.nextId;
    c.nextId = nextFrameId(id);
    c.waiting.set(id, live);
    c.stream.write(envelope(0, channelRequestOf(bytes, id)));
  }

  private readonly channelEvents: ChannelEvents = {
    refused: (unsent) => {
      // A service without the channel ran none of its frames: they go as batches of their own.
      this.channels = false;
      for (const live of unsent) this.sendOnStream(live, batchOf(live));
    },
    answered: (live, r) => {
      if (r.status === 200) this.settleEach(live, r.results);
      else this.failBatch(live, errorOf({ status: r.status, headers: JSON_ERROR, body: r.error }), true);
    },
    closed: (c, unanswered, err) => {
      if (this.channel === c) this.channel = undefined;
      for (const live of unanswered) this.rejectAll(live, err);
    },
  };

  /** A batch's answer on a stream of its own: each call gets its result, or the batch's error. */
  private settle(live: Pending[], answer: Answer) {
    if (answer.status !== 200) {
      this.failBatch(live, errorOf(answer), false);
      return;
    }
    let results: BatchResultWire[];
    try {
      results = decodeBatchResponse(answer.body);
    } catch (err) {
      const error = new ConnectError(
        "the batch's answer does not parse",
        Code.Internal,
        undefined,
        undefined,
        err,
      );
      this.rejectAll(live, error);
      return;
    }
    this.settleEach(live, results);
  }

  /**
   * A batch that failed as a whole. `onChannel`: a channel's answer, whose Unavailable means the service
   * ran none of its calls (it was stopping). A service without BatchService gets single calls from then on.
   */
  private failBatch(live: Pending[], error: ConnectError, onChannel: boolean) {
    if (error.code === Code.Unimplemented) {
      this.batching = false;
      for (const p of live) if (p.guard.disarm()) this.single(p);
      return;
    }
    if (onChannel && error.code === Code.Unavailable) neverRan.add(error);
    this.rejectAll(live, error);
  }

  /** The results of a batch, one per call, each held to the limit as a single call's answer is. */
  private settleEach(live: Pending[], results: BatchResultWire[]) {
    const max = this.limits.maxBytes;
    live.forEach((p, i) => {
      const r = results[i];
      if (!r)
        this.outcome.reject(
          p,
          new ConnectError("the batch answered fewer results than calls", Code.Internal),
        );
      else if (r.body.byteLength > max) this.outcome.reject(p, tooLarge("response", r.body.byteLength, max));
      else this.outcome.resolve(p, { status: r.status, headers: r.headers, body: r.body });
    });
  }
}

const JSON_ERROR = { "content-type": "application/json" };

/** A batch's envelope: its calls, each with its path, body, deadline and headers. */
const batchOf = (live: Pending[]) =>
  encodeBatchRequest(
    live.map((p) => ({
      path: p.path,
      input: p.body,
      timeoutMs: p.timeoutMs,
      headers: p.extra ?? {},
    })),
  );

/** What a channel tells its queue. */
interface ChannelEvents {
  /** The service has no channel (it answered the stream with an error): these frames never ran. */
  refused(unsent: Pending[][]): void;
  answered(live: Pending[], response: ChannelResponseWire): void;
  /** The channel is over; the frames still waiting fail with `err`. */
  closed(c: Channel, unanswered: Pending[][], err: ConnectError): void;
}

/** Opens a batch channel on a session (throws when the session is closing). */
function openChannel(s: http2.ClientHttp2Session, limits: QueueLimits, events: ChannelEvents): Channel {
  rpcClientStats.streams++;
  const c: Channel = {
    session: s,
    stream: s.request({
      ":method": "POST",
      ":path": CHANNEL_PATH,
      "content-type": CHANNEL_CONTENT_TYPE,
      "connect-protocol-version": "1",
    }),
    waiting: new Map(),
    nextId: 1,
    closed: false,
  };
  const reader = new EnvelopeReader(answerLimit(limits.maxBytes));
  // Ended from this side after a quiet spell, so that the session can close as idle.
  c.stream.setTimeout(limits.idleTimeoutMs, () => c.stream.end());
  c.stream.on("response", (h) => {
    if (Number(h[":status"]) === 200) return;
    const unsent = [...c.waiting.values()];
    c.waiting.clear();
    events.refused(unsent);
  });
  c.stream.on("data", (chunk: Buffer) => readAnswers(c, reader, chunk, events));
  /**
   * The service answers every request it read before it ends its side, so when it ended the stream (or
   * refused it) what is left never ran; when the stream broke, it may have.
   */
  const close = (err: Error | undefined) => {
    if (c.closed) return;
    c.closed = true;
    const error = unavailable(err ?? new Error("the batch channel closed"), !err || unopened(c.stream));
    const unanswered = [...c.waiting.values()];
    c.waiting.clear();
    events.closed(c, unanswered, error);
  };
  c.stream.on("end", () => {
    close(undefined);
    // The service ended its side; ending ours closes the stream, so that its session can close.
    c.stream.end();
  });
  c.stream.on("error", (err) => close(err));
  c.stream.on("close", () => close(new Error(`the batch channel closed (code ${c.stream.rstCode})`)));
  return c;
}

/**
 * Hands each answer a chunk completes to the calls of its batch. The end-of-stream envelope needs
 * nothing: the stream's end follows it. An answer over the limit, or one that does not parse, breaks the
 * channel.
 */
function readAnswers(c: Channel, reader: EnvelopeReader, chunk: Buffer, events: ChannelEvents) {
  for (const e of reader.push(chunk)) {
    if (e.flags & END_STREAM) continue;
    let response: ChannelResponseWire;
    try {
      response = decodeChannelResponse(e.body);
    } catch {
      c.stream.destroy(new Error("a batch channel answer does not parse"));
      return;
    }
    const live = c.waiting.get(response.id);
    if (!live) continue;
    c.waiting.delete(response.id);
    events.answered(live, response);
  }
  if (reader.oversized !== undefined)
    c.stream.destroy(new Error(`a batch channel answer of ${reader.oversized} bytes is over the limit`));
}

/** A session's batch channel (channel.ts) and the frames it has sent that wait for their answer. */
interface Channel {
  session: http2.ClientHttp2Session;
  stream: http2.ClientHttp2Stream;
  waiting: Map<number, Pending[]>;
  nextId: number;
  closed: boolean;
}

/** A call waiting in the queue: what it sends, and its guard. */
interface Pending {
  path: string;
  body: Uint8Array;
  timeoutMs: number;
  signal: AbortSignal;
  extra: Record<string, string> | undefined;
  /** A read: sent again on another copy whatever broke. */
  safe: boolean;
  /** Copies it has been sent to. */
  tries: number;
  guard: Guard<Answer>;
}

/**
 * A call's own deadline and cancellation, and its promise settled once: call() arms one per stream, a
 * batch one per call of it (the batch's stream has no signal of its own). A class, so that a call costs
 * one object rather than a literal with a getter and its closures.
 */
class Guard<T> {
  #settled = false;
  private armed = false;
  private timer: NodeJS.Timeout | undefined;
  /** The abort listener, made only for a signal that can abort. */
  private onAbort: (() => void) | undefined;
  constructor(
    private readonly timeoutMs: number,
    private readonly signal: AbortSignal,
    private readonly resolveCall: (value: T) => void,
    private readonly rejectCall: (err: unknown) => void,
    /** Runs when the call fails, before its promise rejects (call() cancels its stream). */
    private readonly onFail?: () => void,
  ) {}

  get settled(): boolean {
    return this.#settled;
  }

  /**
   * Starts the deadline and listens to the signal (once: a call sent again to another copy keeps its
   * deadline); false (the call failed Canceled) if it was aborted.
   */
  arm(): boolean {
    if (this.armed || this.#settled) return !this.#settled;
    if (this.signal.aborted) {
      this.reject(cancelled());
      return false;
    }
    this.timer = setTimeout(
      () => this.reject(new ConnectError("the operation timed out", Code.DeadlineExceeded)),
      this.timeoutMs,
    );
    if (this.signal !== NEVER) {
      this.onAbort = () => this.reject(cancelled());
      this.signal.addEventListener("abort", this.onAbort, { once: true });
    }
    this.armed = true;
    return true;
  }

  /** Stops both again; false if the call has settled meanwhile. */
  disarm(): boolean {
    this.stop();
    return !this.#settled;
  }

  resolve(value: T) {
    if (this.#settled) return;
    this.#settled = true;
    this.stop();
    this.resolveCall(value);
  }

  reject(err: unknown) {
    if (this.#settled) return;
    this.#settled = true;
    this.stop();
    this.onFail?.();
    this.rejectCall(err);
  }

  private stop() {
    this.armed = false;
    clearTimeout(this.timer);
    if (this.onAbort) this.signal.removeEventListener("abort", this.onAbort);
  }
}

const cancelled = () => new ConnectError("the call was cancelled", Code.Canceled);

/**
 * One unary exchange. Fails with Unavailable when the service cannot be reached or the stream breaks
 * (marked never ran when the stream never left or was refused), DeadlineExceeded past the deadline (the
 * service gets it too, as connect-timeout-ms), Canceled when the caller's signal aborts.
 */
function call(
  session: http2.ClientHttp2Session,
  req: {
    path: string;
    body: Uint8Array;
    timeoutMs: number;
    signal: AbortSignal;
    extra: Record<string, string> | undefined;
  },
  /** The longest answer read: past it the stream is cancelled and the call fails ResourceExhausted. */
  maxAnswer: number,
): Promise<Answer> {
  const { path, body, timeoutMs, signal, extra } = req;
  rpcClientStats.streams++;
  return new Promise((resolve, reject) => {
    const headers: http2.OutgoingHttpHeaders = {
      ":method": "POST",
      ":path": path,
      "content-type": "application/proto",
      "connect-protocol-version": "1",
      "connect-timeout-ms": String(timeoutMs),
    };
    if (extra) for (const key in extra) headers[key] = extra[key];
    let stream: http2.ClientHttp2Stream | undefined;
    const g = new Guard(timeoutMs, signal, resolve, reject, () => {
      if (stream && !stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
    });
    if (!g.arm()) return;
    try {
      stream = session.request(headers);
    } catch (err) {
      g.reject(unavailable(err, true));
      return;
    }
    const opened = stream;
    let status = 0;
    let responseHeaders: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    opened.on("response", (h) => {
      status = Number(h[":status"]);
      responseHeaders = h;
    });
    let size = 0;
    opened.on("data", (chunk: Buffer) => {
      if (g.settled) return;
      size += chunk.length;
      if (size > maxAnswer) g.reject(tooLarge("response", size, maxAnswer, "at least "));
      else chunks.push(chunk);
    });
    opened.on("end", () =>
      g.resolve({
        status,
        headers: responseHeaders,
        body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
      }),
    );
    opened.on("error", (err) => g.reject(unavailable(err, unopened(opened))));
    opened.on("close", () => {
      if (!g.settled)
        g.reject(unavailable(new Error(`stream closed (code ${opened.rstCode})`), unopened(opened)));
    });
    opened.end(body);
  });
}

/**
 * Unavailable errors of calls the service certainly never ran, so that they may be sent again, writes
 * too: made only when a call fails, nothing is added to a call that succeeds.
 */
const neverRan = new WeakSet<ConnectError>();

const unavailable = (err: unknown, unsent = false) => {
  const error = new ConnectError(
    err instanceof Error ? err.message : String(err),
    Code.Unavailable,
    undefined,
    undefined,
    err,
  );
  if (unsent) neverRan.add(error);
  return error;
};

/**
 * A stream that never left this process (no id yet: its connection was refused or closed first), or that
 * the service refused (REFUSED_STREAM, which a GOAWAY also gives every stream above its last one): by
 * HTTP/2's rules the service did not process it.
 */
const unopened = (stream: http2.ClientHttp2Stream) =>
  stream.id === undefined || stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM;

/** A failed call's ConnectError: the JSON error body of the Connect protocol, metadata from its headers. */
function errorOf(answer: Answer): ConnectError {
  const fallback = new ConnectError(`HTTP ${answer.status}`, codeFromHttpStatus(answer.status));
  const metadata = toHeaders(answer.headers);
  if (!String(answer.headers["content-type"] ?? "").startsWith("application/json")) {
    metadata.forEach((value, key) => {
      fallback.metadata.append(key, value);
    });
    return fallback;
  }
  try {
    return errorFromJsonBytes(answer.body, metadata, fallback);
  } catch {
    return fallback;
  }
}

/**
 * The HTTP/2 session to one copy of a service, opened on first use and again once it fails, closes or is
 * told to go away (a stopping copy, or one that ends old connections so that new copies get their share);
 * closed after `idleTimeoutMs` without traffic. `connected` and `broken` tell the copy whether it is up.
 */
function sessionPool(
  origin: string,
  opts: { idleTimeoutMs: number; keepaliveMs: number },
  events: { connected(): void; broken(): void },
) {
  let current: http2.ClientHttp2Session | undefined;
  return {
    get(): http2.ClientHttp2Session {
      if (current && !current.closed && !current.destroyed) return current;
      const s = http2.connect(origin, { settings: flowSettings });
      s.once("connect", () => widenSessionWindow(s));
      const drop = () => {
        if (current === s) current = undefined;
      };
      // Up once the peer speaks HTTP/2 (its SETTINGS), not when TCP connects: a frozen process
      // still accepts connections.
      s.once("remoteSettings", events.connected);
      s.on("error", () => {
        drop();
        events.broken();
      });
      s.on("goaway", drop);
      s.on("close", drop);
      s.setTimeout(opts.idleTimeoutMs, () => s.close());
      keepalive(s, opts.keepaliveMs);
      // A call in flight keeps the process alive through its deadline timer; an idle session should not.
      s.unref();
      current = s;
      return s;
    },
    /** Ends the session once its streams are done. */
    close() {
      current?.close();
      current = undefined;
    },
  };
}

/**
 * A PING every `ms` while the session is open, idle or not: a peer that stopped (a frozen process, a
 * network that drops packets without a reset) gives no error of its own, so without this the calls in
 * flight would wait for their deadlines and new ones would queue behind them. No answer within `ms`
 * (or no connection after `ms`): the session is destroyed, its calls fail Unavailable (reads go to
 * another copy) and the copy is down until a new connection succeeds. Dead within 2 × `ms` at most.
 */
function keepalive(s: http2.ClientHttp2Session, ms: number) {
  let waiting: NodeJS.Timeout | undefined;
  const dead = (why: string) => s.destroy(new Error(why));
  const tick = setInterval(() => {
    if (waiting || s.destroyed) return;
    if (s.connecting) return dead(`not connected within ${ms} ms`);
    waiting = setTimeout(() => dead(`no answer to a PING within ${ms} ms`), ms).unref();
    try {
      s.ping(() => {
        clearTimeout(waiting);
        waiting = undefined;
      });
    } catch {
      // Closed meanwhile: nothing to watch.
      clearTimeout(waiting);
      waiting = undefined;
    }
  }, ms).unref();
  s.once("close", () => {
    clearInterval(tick);
    clearTimeout(waiting);
  });
}
