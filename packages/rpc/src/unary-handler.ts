import type * as http2 from "node:http2";
import { constants as http2constants } from "node:http2";
import {
  create,
  type DescMethod,
  type DescMethodUnary,
  type DescService,
  isMessage,
  type MessageShape,
} from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  createContextValues,
  type HandlerContext,
  type Interceptor,
  type ServiceImpl,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { codeToHttpStatus, errorToJson, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import type { BatchService } from "@funil/contracts";
import {
  BATCH_PATH,
  type BatchCallWire,
  type ChannelRequestWire,
  type ChannelResponseWire,
  decodeBatchRequest,
  decodeChannelRequest,
  encodeBatchResponse,
  encodeChannelResponse,
} from "./batch-codec.js";
import { CHANNEL_CONTENT_TYPE, CHANNEL_PATH, EnvelopeReader, endStream, envelope } from "./channel.js";
import { codecOf } from "./codec.js";
import { tooLarge } from "./errors.js";
import { headerObject, PLAIN_HEADERS, toHeaders } from "./headers.js";
import { type MethodMetrics, methodMetrics } from "./metrics.js";
import { encodedBytesOf } from "./row-pages.js";

type Impl = (req: unknown, ctx: HandlerContext) => unknown;
interface Route {
  service: DescService;
  method: DescMethodUnary;
  impl: Impl;
  metrics: MethodMetrics;
  /** The server's interceptors around the implementation (chainOf), built once per method. */
  chain: Next;
}
type Next = Parameters<Interceptor>[0];

/** What a unary call answers, alone on its stream or as one result of a batch. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

/** The most calls one batch may carry (the client sends at most BATCH_SIZE of them). */
const MAX_BATCH = 256;

/** What the lean path answers with: the recorded routes, the server's interceptors, its limit, its channels. */
interface FastPath {
  routes: Map<string, Route>;
  interceptors: Interceptor[];
  /** The largest message read or written (RPC_MAX_MESSAGE_BYTES): a request body, a frame, an answer. */
  maxBytes: number;
  /** The open channels (channel.ts), each able to drain (answer what it read, then end), by session. */
  channels: Map<() => void, http2.Http2Session | undefined>;
}

/**
 * The server side of unary-transport.ts: a Connect unary call with a binary body is answered here,
 * straight from the HTTP/2 request to the implementation, through the same interceptors, without the
 * per-call AbortControllers, WHATWG Headers and async iterables of connect-node's adapter (a large share
 * of crm's CPU per read: bench/RESULTS.md). Everything else (gRPC, gRPC-web, Connect with JSON, GET,
 * compressed bodies, an unknown method) returns false, for connect-node's adapter to answer as before.
 *
 * `record(router)` wraps the router handed to the routes function, so that the implementations it
 * registers are known here too; `handle(req, res)` answers a request it can take and says whether it did.
 */
export function unaryFastPath(interceptors: Interceptor[], opts: { maxMessageBytes: number }) {
  const fp: FastPath = {
    routes: new Map(),
    interceptors,
    maxBytes: opts.maxMessageBytes,
    channels: new Map(),
  };
  return {
    record: (router: ConnectRouter) => recorder(router, fp),
    handle: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => handle(fp, req, res),
    batch: batchService(fp),
    /**
     * Ends the open channels once their frames are answered: every one (the server is stopping), or those
     * of one session (it is being closed for its age).
     */
    drainChannels(session?: http2.Http2Session) {
      for (const [drain, of] of fp.channels) if (!session || of === session) drain();
    },
  };
}

/** A router that registers on `router` and records each unary implementation in `routes`. */
function recorder(router: ConnectRouter, fp: FastPath): ConnectRouter {
  const add = (service: DescService, method: DescMethodUnary, impl: Impl) => {
    const route = { service, method, impl, metrics: methodMetrics(service.typeName, method.name) };
    fp.routes.set(`/${service.typeName}/${method.name}`, {
      ...route,
      chain: chainOf(fp.interceptors, route),
    });
  };
  const recording: ConnectRouter = {
    get handlers() {
      return router.handlers;
    },
    service(service, implementation, options) {
      router.service(service, implementation, options);
      for (const method of service.methods) {
        const impl = (implementation as Record<string, Impl | undefined>)[method.localName];
        if (method.methodKind === "unary" && impl)
          add(service, method as DescMethodUnary, impl.bind(implementation));
      }
      return recording;
    },
    rpc(method, impl, options) {
      router.rpc(method, impl, options);
      if (method.methodKind === "unary")
        add(method.parent, method as DescMethodUnary, impl as unknown as Impl);
      return recording;
    },
  };
  return recording;
}

/** Takes a binary Connect unary call (or the batch channel) and answers it; false: not one of ours. */
function handle(fp: FastPath, req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): boolean {
  const h = req.headers;
  if (h[":path"] === CHANNEL_PATH && h[":method"] === "POST" && h["content-type"] === CHANNEL_CONTENT_TYPE) {
    openChannel(fp, req, res);
    return true;
  }
  const route = fp.routes.get(h[":path"] ?? "");
  if (!route || !isLeanCall(h)) return false;
  const startedAt = performance.now();
  readBody(req, fp.maxBytes, {
    refuse(err) {
      if (h[":path"] !== BATCH_PATH) route.metrics.done(err.code, startedAt);
      writeAnswer(res, errorAnswer(err));
      // RST_STREAM(NO_ERROR) once the answer is out: the client stops sending the rest (RFC 9113 §8.1).
      res.stream.close(http2constants.NGHTTP2_NO_ERROR);
    },
    read(body) {
      const answering =
        h[":path"] === BATCH_PATH
          ? respondToBatch(fp, h, body)
          : respond(fp, route, h, `http://${h[":authority"] ?? "localhost"}${h[":path"]}`, body, {
              timeoutMs: parseTimeout(h["connect-timeout-ms"]),
              startedAt,
            });
      answering.then((answer) => writeAnswer(res, answer));
    },
  });
  return true;
}

/** A Connect unary POST with a binary, uncompressed body. */
const isLeanCall = (h: http2.IncomingHttpHeaders) => {
  const version = h["connect-protocol-version"];
  const encoding = h["content-encoding"];
  return (
    h[":method"] === "POST" &&
    h["content-type"] === "application/proto" &&
    (version === undefined || version === "1") &&
    (encoding === undefined || encoding === "identity")
  );
};

/**
 * A request's body, joined once, or `refuse` with resource_exhausted as soon as it is known to be longer
 * than `max` (its content-length, or the bytes come so far): what follows is dropped as it comes, never
 * held.
 */
function readBody(
  req: http2.Http2ServerRequest,
  max: number,
  then: { read(body: Buffer): void; refuse(err: ConnectError): void },
) {
  const declared = Number(req.headers["content-length"]);
  if (declared > max) return then.refuse(tooLarge("request", declared, max));
  const chunks: Buffer[] = [];
  let size = 0;
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (size <= max) {
      chunks.push(chunk);
      return;
    }
    req.off("data", onData).off("end", onEnd);
    chunks.length = 0;
    req.on("data", () => {});
    then.refuse(tooLarge("request", size, max, "at least "));
  };
  const onEnd = () => then.read(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  req.on("data", onData).on("end", onEnd);
}

function writeAnswer(res: http2.Http2ServerResponse, answer: Answer) {
  if (res.stream.destroyed || res.headersSent) return;
  res.writeHead(answer.status, answer.headers);
  res.end(answer.body);
}

/**
 * One unary call, from its request bytes to what the Connect protocol answers: 200 and the response
 * message, or the error's status, metadata and JSON body; counted in the method's metrics. Never rejects.
 */
async function respond(
  fp: FastPath,
  route: Route,
  headers: http2.IncomingHttpHeaders,
  url: string,
  body: Uint8Array,
  call: { timeoutMs: number | undefined; startedAt: number },
): Promise<Answer> {
  const ctx = new CallContext(route, headers, url, call.timeoutMs);
  try {
    const running = route.chain(new CallRequest(ctx, decodeInput(route, body))) as Promise<UnaryResponse>;
    const response = await (call.timeoutMs === undefined
      ? running
      : withinDeadline(ctx, call.timeoutMs, running));
    // A reply written as bytes already (a row page, row-pages.ts) goes out as it is.
    const bytes = encodedBytesOf(response.message) ?? codecOf(route.method.output).encode(response.message);
    if (bytes.byteLength > fp.maxBytes) throw tooLarge("response", bytes.byteLength, fp.maxBytes);
    route.metrics.done(undefined, call.startedAt);
    const header = ctx.touchedResponseHeader();
    return {
      status: 200,
      headers: header ? { ...headerObject(header), ...PROTO_HEADERS } : PROTO_HEADERS,
      body: bytes,
    };
  } catch (err) {
    const error = ConnectError.from(err);
    route.metrics.done(error.code, call.startedAt);
    return errorAnswer(error);
  }
}

/** The headers of an answer whose implementation set none: one object for every such answer, never written to. */
const PROTO_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-type": "application/proto",
});

function decodeInput(route: Route, body: Uint8Array): MessageShape<DescMethodUnary["input"]> {
  try {
    return codecOf(route.method.input).decode(body);
  } catch (err) {
    throw new ConnectError(
      "the request message does not parse",
      Code.InvalidArgument,
      undefined,
      undefined,
      err,
    );
  }
}

/**
 * The server's interceptors around a method's implementation, built once when it is recorded: the
 * innermost step finds the call's context on the request it is handed (CallRequest).
 */
function chainOf(interceptors: Interceptor[], route: Omit<Route, "chain">): Next {
  return interceptors.reduceRight<Next>((next, interceptor) => interceptor(next), ((req: CallRequest) =>
    invoke(route, req)) as unknown as Next);
}

/**
 * The call's answer, or DeadlineExceeded (and the handler's signal aborted) once its deadline passes: one
 * timer and one promise, cleared as soon as the call settles.
 */
function withinDeadline<T>(ctx: CallContext, timeoutMs: number, call: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      ctx.abort();
      reject(new ConnectError("the operation timed out", Code.DeadlineExceeded));
    }, timeoutMs);
    call.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/**
 * The calls of a batch (proto/funil/rpc/v1/batch.proto), each answered by respond() as if it had come
 * alone, all at once; the batch answers when the last of them has.
 */
function answerAll(fp: FastPath, calls: BatchCallWire[], url: (path: string) => string): Promise<Answer[]> {
  if (calls.length > MAX_BATCH)
    throw new ConnectError(`a batch holds at most ${MAX_BATCH} calls`, Code.InvalidArgument);
  const startedAt = performance.now();
  return Promise.all(
    calls.map((c) => {
      const route = c.path === BATCH_PATH ? undefined : fp.routes.get(c.path);
      if (!route) return unimplemented(c.path);
      return respond(fp, route, c.headers, url(c.path), c.input, {
        timeoutMs: c.timeoutMs || undefined,
        startedAt,
      });
    }),
  );
}

/** The BatchService for every other client (gRPC, Connect JSON), through connect-node. */
function batchService(fp: FastPath): ServiceImpl<typeof BatchService> {
  return {
    async call(req, ctx) {
      const results = await answerAll(fp, req.calls, (path) => ctx.url.replace(BATCH_PATH, path));
      return { results };
    },
    channel: (requests, ctx) => channelAnswers(fp, requests, (path) => ctx.url.replace(CHANNEL_PATH, path)),
  };
}

/**
 * BatchService.Channel for the clients of connect-node's path (gRPC, Connect JSON): each request
 * answered as soon as its calls are, in whatever order; the stream ends once the client's has and every
 * request read has its answer.
 */
async function* channelAnswers(
  fp: FastPath,
  requests: AsyncIterable<ChannelRequestWire>,
  url: (path: string) => string,
) {
  const done: Array<Omit<ChannelResponseWire, "error"> & { error?: Uint8Array }> = [];
  let running = 0;
  let ended = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const read = async () => {
    for await (const r of requests) {
      running++;
      (async () => answerAll(fp, r.calls, url))()
        .then(
          (results) => ({ id: r.id, status: 200, results }),
          (err: unknown) => {
            const e = errorAnswer(err);
            return { id: r.id, status: e.status, results: [], error: e.body };
          },
        )
        .then((answer) => {
          done.push(answer);
          running--;
          notify();
        });
    }
  };
  read().then(
    () => {
      ended = true;
      notify();
    },
    (err: unknown) => {
      failure = err;
      ended = true;
      notify();
    },
  );
  for (;;) {
    while (done.length > 0) yield done.shift()!;
    if (failure) throw failure;
    if (ended && running === 0) return;
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
  }
}

/** The services' own clients' batches on a stream of their own: the envelope through batch-codec.ts. */
async function respondToBatch(
  fp: FastPath,
  headers: http2.IncomingHttpHeaders,
  body: Uint8Array,
): Promise<Answer> {
  try {
    let calls: BatchCallWire[];
    try {
      calls = decodeBatchRequest(body);
    } catch (err) {
      throw new ConnectError("the batch does not parse", Code.InvalidArgument, undefined, undefined, err);
    }
    const results = await answerAll(fp, calls, originOf(headers));
    return {
      status: 200,
      headers: { "content-type": "application/proto" },
      body: encodeBatchResponse(results),
    };
  } catch (err) {
    return errorAnswer(err);
  }
}

const originOf = (headers: http2.IncomingHttpHeaders) => {
  const origin = `http://${headers[":authority"] ?? "localhost"}`;
  return (path: string) => origin + path;
};

/** A channel request's answer: its calls' results, or the error of the batch as a whole. */
async function respondOnChannel(
  fp: FastPath,
  headers: http2.IncomingHttpHeaders,
  request: ChannelRequestWire,
): Promise<Uint8Array> {
  try {
    const results = await answerAll(fp, request.calls, originOf(headers));
    return encodeChannelResponse({ id: request.id, status: 200, results });
  } catch (err) {
    return channelError(request.id, err);
  }
}

const channelError = (id: number, err: unknown) => {
  const error = errorAnswer(err);
  return encodeChannelResponse({ id, status: error.status, results: [], error: error.body });
};

/**
 * A client's batch channel (BatchService.Channel): each request read is answered as a batch, in whatever
 * order they finish. It ends once the client has ended its side or the server is stopping
 * (drainChannels), and every request read by then has its answer; one that comes while it drains is
 * answered Unavailable without being run, so the client may retry its reads. A request that does not
 * parse, or whose envelope announces more than RPC_MAX_MESSAGE_BYTES, ends the channel with that error
 * once the others are answered; nothing after it is read.
 */
function openChannel(fp: FastPath, req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) {
  res.writeHead(200, { "content-type": CHANNEL_CONTENT_TYPE });
  const reader = new EnvelopeReader(fp.maxBytes);
  let running = 0;
  let draining = false;
  let ended = false;
  /** What ends the channel, when the client's requests do. */
  let failure: ConnectError | undefined;
  const send = (bytes: Uint8Array) => {
    if (!ended && !res.stream.destroyed) res.write(envelope(0, bytes));
  };
  const drain = () => {
    draining = true;
    if (running > 0 || ended) return;
    ended = true;
    res.end(endStream(failure && errorToJson(failure, undefined)));
    // The client ends its side when it sees ours end; one that does not is not waited for long.
    setTimeout(() => res.stream.close(), 1000).unref();
  };
  const stop = (err: ConnectError) => {
    failure ??= err;
    req.off("data", onData).on("data", () => {});
    drain();
  };
  const run = (body: Buffer) => {
    let request: ChannelRequestWire;
    try {
      request = decodeChannelRequest(body);
    } catch (err) {
      return stop(
        new ConnectError("a channel request does not parse", Code.InvalidArgument, undefined, undefined, err),
      );
    }
    if (draining)
      return send(channelError(request.id, new ConnectError("the service is stopping", Code.Unavailable)));
    running++;
    respondOnChannel(fp, req.headers, request).then((bytes) => {
      send(bytes);
      running--;
      if (draining) drain();
    });
  };
  const onData = (chunk: Buffer) => {
    for (const e of reader.push(chunk)) {
      if (e.flags !== 0)
        return stop(new ConnectError("a channel request is compressed or flagged", Code.InvalidArgument));
      run(e.body);
      if (failure) return;
    }
    if (reader.oversized !== undefined) stop(tooLarge("request", reader.oversized, fp.maxBytes));
  };
  fp.channels.set(drain, req.stream.session);
  res.stream.on("close", () => fp.channels.delete(drain));
  req.on("data", onData);
  req.on("end", drain);
}

/** The innermost step of the interceptor chain: the implementation itself, with the request's context. */
async function invoke(route: Omit<Route, "chain">, req: CallRequest): Promise<UnaryResponse> {
  const result = await route.impl(req.message, req.ctx);
  const output = route.method.output;
  // What the implementation returned, as is: the generated encoder takes a message's init shape (an unset
  // field undefined); create() walked the descriptor for every answer.
  const message = (
    isMessage(result, output) || codecOf(output).kind === "generated"
      ? (result ?? {})
      : create(output, result as never)
  ) as MessageShape<typeof output>;
  return new CallResponse(req.ctx, message);
}

/**
 * A call's UnaryRequest, its plain headers under PLAIN_HEADERS; the signal, the Headers and the context
 * values are the context's, made only once something reads them. A class, so that a call costs one
 * object rather than an object and a closure per getter.
 */
class CallRequest implements UnaryRequest {
  readonly stream = false;
  readonly requestMethod = "POST";
  readonly service: DescService;
  readonly method: DescMethodUnary;
  readonly url: string;
  readonly [PLAIN_HEADERS]: CallContext["plainHeaders"];
  constructor(
    readonly ctx: CallContext,
    readonly message: MessageShape<DescMethodUnary["input"]>,
  ) {
    this.service = ctx.service;
    this.method = ctx.method as DescMethodUnary;
    this.url = ctx.url;
    this[PLAIN_HEADERS] = ctx.plainHeaders;
  }
  get signal() {
    return this.ctx.signal;
  }
  get header() {
    return this.ctx.requestHeader;
  }
  get contextValues() {
    return this.ctx.values;
  }
}

/** The implementation's UnaryResponse; its Headers are the context's, made only for an interceptor that reads them. */
class CallResponse implements UnaryResponse {
  readonly stream = false;
  readonly service: DescService;
  readonly method: DescMethodUnary;
  constructor(
    private readonly ctx: CallContext,
    readonly message: MessageShape<DescMethodUnary["output"]>,
  ) {
    this.service = ctx.service;
    this.method = ctx.method as DescMethodUnary;
  }
  get header() {
    return this.ctx.responseHeader;
  }
  get trailer() {
    return this.ctx.responseTrailer;
  }
}

/** A HandlerContext whose signal and Headers objects exist only once something reads them. */
class CallContext implements HandlerContext {
  readonly requestMethod = "POST";
  readonly protocolName = "connect";
  readonly method: DescMethod;
  readonly service: DescService;
  #controller: AbortController | undefined;
  #requestHeader: Headers | undefined;
  #responseHeader: Headers | undefined;
  #responseTrailer: Headers | undefined;
  #values: ContextValues | undefined;
  constructor(
    route: Route,
    /** The request's headers as HTTP/2 (or the batch frame) gave them. */
    readonly plainHeaders: http2.IncomingHttpHeaders,
    readonly url: string,
    private readonly timeout: number | undefined,
  ) {
    this.method = route.method as DescMethod;
    this.service = route.service;
  }
  timeoutMs() {
    return this.timeout;
  }
  get signal() {
    this.#controller ??= new AbortController();
    return this.#controller.signal;
  }
  get requestHeader() {
    this.#requestHeader ??= toHeaders(this.plainHeaders);
    return this.#requestHeader;
  }
  get responseHeader() {
    this.#responseHeader ??= new Headers();
    return this.#responseHeader;
  }
  get responseTrailer() {
    this.#responseTrailer ??= new Headers();
    return this.#responseTrailer;
  }
  get values() {
    this.#values ??= createContextValues();
    return this.#values;
  }
  abort() {
    this.#controller?.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
  }
  /** The response's Headers if the implementation or an interceptor made them, else undefined. */
  touchedResponseHeader() {
    return this.#responseHeader;
  }
}

/** What the Connect protocol answers for an error: its status, its metadata as headers, its JSON body. */
function errorAnswer(err: unknown): Answer {
  const error = ConnectError.from(err);
  return {
    status: codeToHttpStatus(error.code),
    headers: { ...headerObject(error.metadata), "content-type": "application/json" },
    body: errorToJsonBytes(error, {}),
  };
}

/** The answer to a path that names no method of this service (or a batch inside a batch). */
const unimplemented = (path: string) =>
  errorAnswer(new ConnectError(`${path} is not implemented`, Code.Unimplemented));

function parseTimeout(value: string | string[] | undefined): number | undefined {
  if (typeof value !== "string" || !/^\d{1,10}$/.test(value)) return undefined;
  return Number(value);
}
