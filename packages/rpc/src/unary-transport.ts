import * as http2 from "node:http2";
import {
  create,
  type DescMessage,
  type DescMethodUnary,
  isMessage,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
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
import { createConnectTransport } from "@connectrpc/connect-node";
import { BATCH_PATH, decodeBatchResponse, encodeBatchRequest } from "./batch-codec.js";
import { CHANNEL_PATH, FrameReader, nextFrameId, requestFrame } from "./channel.js";
import { codecOf } from "./codec.js";
import { headerObject, toHeaders } from "./headers.js";

/**
 * The Connect protocol's unary call (a POST of the binary message, the answer's status and body) straight
 * on node:http2. connect-node's transport does the same with, per call, two AbortControllers and the
 * DOMException of aborting one when the call ends, WHATWG Headers for both directions, async iterables
 * for a one-message body and a deadline timer linked through abort events: measured in bench/, that was
 * a fifth of the gateway's CPU per read. Here a call costs one stream and one timer; Headers objects are
 * made only when an interceptor or an error reads them. Streaming methods (none yet) go through
 * connect-node's own transport.
 */
export function createUnaryTransport(opts: {
  baseUrl: string;
  defaultTimeoutMs: number;
  interceptors: Interceptor[];
  idleTimeoutMs: number;
}): Transport {
  const session = sessionPool(opts.baseUrl, opts.idleTimeoutMs);
  const exchange = coalescing(session, opts.idleTimeoutMs);
  const streaming = createConnectTransport({
    baseUrl: opts.baseUrl,
    httpVersion: "2",
    useBinaryFormat: true,
  });
  const origin = opts.baseUrl.replace(/\/$/, "");

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
      let headers: Headers | undefined;
      const req: UnaryRequest<I, O> = {
        stream: false,
        service: method.parent,
        method,
        requestMethod: "POST",
        url: origin + path,
        signal: signal ?? NEVER,
        get header() {
          headers ??= new Headers(header);
          return headers;
        },
        contextValues: contextValues ?? createContextValues(),
        // The caller's init shape as is when the generated encoder writes it (create() walked the descriptor
        // for every call); interceptors here read only the method.
        message: (isMessage(input, method.input) || codecOf(method.input).kind === "generated"
          ? input
          : create(method.input, input)) as MessageShape<I>,
      };
      const send = async (r: UnaryRequest<I, O>): Promise<UnaryResponse<I, O>> => {
        const extra = headers ?? (header ? new Headers(header) : undefined);
        const answer = await exchange(
          path,
          codecOf(method.input).encode(r.message),
          deadline,
          r.signal,
          extra,
        );
        if (answer.status !== 200) throw errorOf(answer);
        if (answer.headers["content-type"] !== "application/proto")
          throw new ConnectError(`unexpected content-type ${answer.headers["content-type"]}`, Code.Internal);
        return {
          stream: false,
          service: method.parent,
          method,
          message: codecOf(method.output).decode(answer.body),
          get header() {
            return toHeaders(answer.headers);
          },
          trailer: new Headers(),
        };
      };
      const run = opts.interceptors.reduceRight<Next>(
        (next, interceptor) => interceptor(next),
        send as unknown as Next,
      );
      return (await run(req)) as UnaryResponse<I, O>;
    },
    stream: (...args) => streaming.stream(...args),
  };
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
  extra: Headers | undefined,
) => Promise<Answer>;

/**
 * Unary calls made by this process's clients, the batches that carried them, and the HTTP/2 streams
 * opened (a single call's, a batch's of its own, a channel's, which carries many batches): the gateway's
 * /metrics shows all three, so the saving of batching under load can be seen.
 */
export const rpcClientStats = { calls: 0, batches: 0, streams: 0 };

/** The most calls sent in one batch; more calls of one turn go in several. */
const BATCH_SIZE = 64;

/**
 * The calls made in one turn of the event loop (all the requests the gateway read from its sockets at
 * once, each calling this service) leave together, as one frame on the session's batch channel
 * (channel.ts: one long-lived stream), answered by the service's BatchService exactly as if each had come
 * alone. A stream costs both ends far more CPU than the few bytes of a call (bench/RESULTS.md), so
 * under load the cost per call falls with the batch, and with no load nothing waits: the batch leaves at
 * the end of the turn that made it. Each call keeps its own deadline, cancellation, headers and answer; a
 * batch that fails as a whole (the service unreachable, the channel broken) fails each of its calls the
 * same way, so the retry rules of the interceptors apply per call. A service without the channel gets
 * one stream per batch (the BatchService's Call), and one without BatchService (an older copy during a
 * rolling deploy) single calls, from then on.
 */
function coalescing(session: () => http2.ClientHttp2Session, idleTimeoutMs: number): Exchange {
  let queue: Pending[] = [];
  let batching = true;
  let channels = true;
  let channel: Channel | undefined;
  const single = (p: Pending) =>
    call(session(), p.path, p.body, p.timeoutMs, p.signal, p.extra).then(p.guard.resolve, p.guard.reject);
  const flush = () => {
    const calls = queue;
    queue = [];
    if (!batching || (calls.length === 1 && !channels)) {
      for (const p of calls) single(p);
      return;
    }
    for (let i = 0; i < calls.length; i += BATCH_SIZE) {
      const live = calls.slice(i, i + BATCH_SIZE).filter((p) => p.guard.arm());
      if (live.length === 0) continue;
      if (channels) sendOnChannel(live);
      else sendBatch(live);
    }
  };
  const batchOf = (live: Pending[]) =>
    encodeBatchRequest(
      live.map((p) => ({
        path: p.path,
        input: p.body,
        timeoutMs: p.timeoutMs,
        headers: p.extra ? headerObject(p.extra) : {},
      })),
    );
  /** Each call of a batch gets its result, or the batch's error. */
  const settle = (live: Pending[], answer: Answer) => {
    if (answer.status === 200) {
      let results: ReturnType<typeof decodeBatchResponse>;
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
        for (const p of live) p.guard.reject(error);
        return;
      }
      live.forEach((p, i) => {
        const r = results[i];
        if (r) p.guard.resolve({ status: r.status, headers: r.headers, body: r.body });
        else p.guard.reject(new ConnectError("the batch answered fewer results than calls", Code.Internal));
      });
      return;
    }
    const error = errorOf(answer);
    if (error.code === Code.Unimplemented) {
      batching = false;
      for (const p of live) if (p.guard.disarm()) single(p);
      return;
    }
    for (const p of live) p.guard.reject(error);
  };
  /** A batch on a stream of its own (BatchService.Call). */
  const sendBatch = (live: Pending[]) => {
    rpcClientStats.batches++;
    const deadline = Math.max(...live.map((p) => p.timeoutMs));
    call(session(), BATCH_PATH, batchOf(live), deadline, NEVER, undefined).then(
      (answer) => settle(live, answer),
      (err) => {
        for (const p of live) p.guard.reject(err);
      },
    );
  };
  /** A batch as a frame on the channel, opened on first use and again once it ends. */
  const sendOnChannel = (live: Pending[]) => {
    rpcClientStats.batches++;
    const s = session();
    if (!channel || channel.session !== s || channel.closed) {
      // A channel left on a closing session ends too, once its frames are answered.
      if (channel && !channel.closed) channel.stream.end();
      channel = openChannel(s);
    }
    const c = channel;
    const id = c.nextId;
    c.nextId = nextFrameId(id);
    c.waiting.set(id, live);
    c.stream.write(requestFrame(id, batchOf(live)));
  };
  const openChannel = (s: http2.ClientHttp2Session): Channel => {
    rpcClientStats.streams++;
    const c: Channel = {
      session: s,
      stream: s.request({
        ":method": "POST",
        ":path": CHANNEL_PATH,
        "content-type": "application/proto",
        "connect-protocol-version": "1",
      }),
      waiting: new Map(),
      nextId: 1,
      closed: false,
    };
    const reader = new FrameReader(true);
    // Ended from this side after a quiet spell, so that the session can close as idle.
    c.stream.setTimeout(idleTimeoutMs, () => c.stream.end());
    c.stream.on("response", (h) => {
      if (Number(h[":status"]) === 200) return;
      // A service without the channel ran none of its frames: they go as batches of their own.
      channels = false;
      const unsent = [...c.waiting.values()];
      c.waiting.clear();
      for (const live of unsent) sendBatch(live);
    });
    c.stream.on("data", (chunk: Buffer) => {
      let frames: ReturnType<FrameReader["push"]>;
      try {
        frames = reader.push(chunk);
      } catch (err) {
        c.stream.destroy(err as Error);
        return;
      }
      for (const f of frames) {
        const live = c.waiting.get(f.id);
        if (!live) continue;
        c.waiting.delete(f.id);
        settle(live, {
          status: f.status,
          headers: f.status === 200 ? {} : { "content-type": "application/json" },
          body: f.body,
        });
      }
    });
    const close = (err?: Error) => {
      if (c.closed) return;
      c.closed = true;
      if (channel === c) channel = undefined;
      // The service answers every frame it read before it ends the stream: what is left never ran.
      const error = unavailable(err ?? new Error("the batch channel closed"));
      for (const live of c.waiting.values()) for (const p of live) p.guard.reject(error);
      c.waiting.clear();
    };
    c.stream.on("end", () => {
      close();
      // The service ended its side; ending ours closes the stream, so that its session can close.
      c.stream.end();
    });
    c.stream.on("error", (err) => close(err));
    c.stream.on("close", () => close(new Error(`the batch channel closed (code ${c.stream.rstCode})`)));
    return c;
  };
  return (path, body, timeoutMs, signal, extra) =>
    new Promise<Answer>((resolve, reject) => {
      rpcClientStats.calls++;
      if (queue.length === 0) setImmediate(flush);
      queue.push({ path, body, timeoutMs, signal, extra, guard: guard(timeoutMs, signal, resolve, reject) });
    });
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
  extra: Headers | undefined;
  guard: Guard<Answer>;
}

/**
 * A call's own deadline and cancellation, and its promise settled once: call() arms one per stream, a
 * batch one per call of it (the batch's stream has no signal of its own).
 */
interface Guard<T> {
  /** Starts the deadline and listens to the signal; false (the call failed Canceled) if it was aborted. */
  arm(): boolean;
  /** Stops both again; false if the call has settled meanwhile. */
  disarm(): boolean;
  readonly settled: boolean;
  resolve(value: T): void;
  reject(err: unknown): void;
}

function guard<T>(
  timeoutMs: number,
  signal: AbortSignal,
  resolve: (value: T) => void,
  reject: (err: unknown) => void,
  /** Runs when the call fails, before its promise rejects (call() cancels its stream). */
  onFail?: () => void,
): Guard<T> {
  let settled = false;
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    clearTimeout(timer);
    if (signal !== NEVER) signal.removeEventListener("abort", onAbort);
  };
  const onAbort = () => g.reject(new ConnectError("the call was cancelled", Code.Canceled));
  const g: Guard<T> = {
    arm() {
      if (signal.aborted) {
        onAbort();
        return false;
      }
      timer = setTimeout(
        () => g.reject(new ConnectError("the operation timed out", Code.DeadlineExceeded)),
        timeoutMs,
      );
      if (signal !== NEVER) signal.addEventListener("abort", onAbort, { once: true });
      return true;
    },
    disarm() {
      stop();
      return !settled;
    },
    get settled() {
      return settled;
    },
    resolve(value) {
      if (settled) return;
      settled = true;
      stop();
      resolve(value);
    },
    reject(err) {
      if (settled) return;
      settled = true;
      stop();
      onFail?.();
      reject(err);
    },
  };
  return g;
}

/**
 * One unary exchange. Fails with Unavailable when the service cannot be reached or the stream breaks
 * (only reads are retried, by the interceptor), DeadlineExceeded past the deadline (the service gets it
 * too, as connect-timeout-ms), Canceled when the caller's signal aborts.
 */
function call(
  session: http2.ClientHttp2Session,
  path: string,
  body: Uint8Array,
  timeoutMs: number,
  signal: AbortSignal,
  extra: Headers | undefined,
): Promise<Answer> {
  rpcClientStats.streams++;
  return new Promise((resolve, reject) => {
    const headers: http2.OutgoingHttpHeaders = {
      ":method": "POST",
      ":path": path,
      "content-type": "application/proto",
      "connect-protocol-version": "1",
      "connect-timeout-ms": String(timeoutMs),
    };
    extra?.forEach((value, key) => {
      headers[key] = value;
    });
    let stream: http2.ClientHttp2Stream | undefined;
    const g = guard(timeoutMs, signal, resolve, reject, () => {
      if (stream && !stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
    });
    if (!g.arm()) return;
    try {
      stream = session.request(headers);
    } catch (err) {
      g.reject(unavailable(err));
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
    opened.on("data", (chunk: Buffer) => chunks.push(chunk));
    opened.on("end", () =>
      g.resolve({
        status,
        headers: responseHeaders,
        body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
      }),
    );
    opened.on("error", (err) => g.reject(unavailable(err)));
    opened.on("close", () => {
      if (!g.settled) g.reject(unavailable(new Error(`stream closed (code ${opened.rstCode})`)));
    });
    opened.end(body);
  });
}

const unavailable = (err: unknown) =>
  new ConnectError(
    err instanceof Error ? err.message : String(err),
    Code.Unavailable,
    undefined,
    undefined,
    err,
  );

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
 * The HTTP/2 session to one service, opened on first use and again once it fails, closes or is told to
 * go away (a stopping service); closed after `idleTimeoutMs` without traffic.
 */
function sessionPool(baseUrl: string, idleTimeoutMs: number) {
  let current: http2.ClientHttp2Session | undefined;
  return () => {
    if (current && !current.closed && !current.destroyed) return current;
    const s = http2.connect(baseUrl);
    const drop = () => {
      if (current === s) current = undefined;
    };
    s.on("error", drop);
    s.on("goaway", drop);
    s.on("close", drop);
    s.setTimeout(idleTimeoutMs, () => s.close());
    // A call in flight keeps the process alive through its deadline timer; an idle session should not.
    s.unref();
    current = s;
    return s;
  };
}
