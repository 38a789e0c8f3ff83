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
import { codeToHttpStatus, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import type { BatchService } from "@funil/contracts";
import { BATCH_PATH, type BatchCallWire, decodeBatchRequest, encodeBatchResponse } from "./batch-codec.js";
import { answerFrame, CHANNEL_PATH, type Frame, FrameReader } from "./channel.js";
import { codecOf } from "./codec.js";
import { headerObject, toHeaders } from "./headers.js";

type Impl = (req: unknown, ctx: HandlerContext) => unknown;
interface Route {
  service: DescService;
  method: DescMethodUnary;
  impl: Impl;
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
export function unaryFastPath(interceptors: Interceptor[]) {
  const routes = new Map<string, Route>();

  const record = (router: ConnectRouter): ConnectRouter => {
    const recorder: ConnectRouter = {
      get handlers() {
        return router.handlers;
      },
      service(service, implementation, options) {
        router.service(service, implementation, options);
        for (const method of service.methods) {
          const impl = (implementation as Record<string, Impl | undefined>)[method.localName];
          if (method.methodKind === "unary" && impl)
            routes.set(`/${service.typeName}/${method.name}`, {
              service,
              method: method as DescMethodUnary,
              impl: impl.bind(implementation),
            });
        }
        return recorder;
      },
      rpc(method, impl, options) {
        router.rpc(method, impl, options);
        if (method.methodKind === "unary")
          routes.set(`/${method.parent.typeName}/${method.name}`, {
            service: method.parent,
            method: method as DescMethodUnary,
            impl: impl as unknown as Impl,
          });
        return recorder;
      },
    };
    return recorder;
  };

  const handle = (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): boolean => {
    const h = req.headers;
    if (h[":path"] === CHANNEL_PATH && h[":method"] === "POST" && h["content-type"] === "application/proto") {
      openChannel(req, res);
      return true;
    }
    const route = routes.get(h[":path"] ?? "");
    const version = h["connect-protocol-version"];
    const encoding = h["content-encoding"];
    if (
      !route ||
      h[":method"] !== "POST" ||
      h["content-type"] !== "application/proto" ||
      (version !== undefined && version !== "1") ||
      (encoding !== undefined && encoding !== "identity")
    )
      return false;
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const answering =
        h[":path"] === BATCH_PATH
          ? respondToBatch(h, body)
          : respond(
              route,
              h,
              `http://${h[":authority"] ?? "localhost"}${h[":path"]}`,
              body,
              parseTimeout(h["connect-timeout-ms"]),
            );
      answering.then((answer) => {
        if (res.stream.destroyed || res.headersSent) return;
        res.writeHead(answer.status, answer.headers);
        res.end(answer.body);
      });
    });
    return true;
  };

  /**
   * One unary call, from its request bytes to what the Connect protocol answers: 200 and the response
   * message, or the error's status, metadata and JSON body. Never rejects.
   */
  async function respond(
    route: Route,
    headers: http2.IncomingHttpHeaders,
    url: string,
    body: Uint8Array,
    timeoutMs: number | undefined,
  ): Promise<Answer> {
    const ctx = context(route, headers, url, timeoutMs);
    let timer: NodeJS.Timeout | undefined;
    try {
      let message: MessageShape<DescMethodUnary["input"]>;
      try {
        message = codecOf(route.method.input).decode(body);
      } catch (err) {
        throw new ConnectError(
          "the request message does not parse",
          Code.InvalidArgument,
          undefined,
          undefined,
          err,
        );
      }
      const run = interceptors.reduceRight<Next>(
        (next, interceptor) => interceptor(next),
        invoke(route, ctx) as unknown as Next,
      );
      const call = run(request(route, ctx, message));
      const response = (await (timeoutMs === undefined
        ? call
        : Promise.race([
            call,
            new Promise<never>((_, reject) => {
              timer = setTimeout(() => {
                ctx.abort();
                reject(new ConnectError("the operation timed out", Code.DeadlineExceeded));
              }, timeoutMs);
            }),
          ]))) as UnaryResponse;
      return {
        status: 200,
        headers: { ...headerObject(ctx.touchedResponseHeader()), "content-type": "application/proto" },
        body: codecOf(route.method.output).encode(response.message),
      };
    } catch (err) {
      return errorAnswer(err);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The calls of a batch (proto/funil/rpc/v1/batch.proto), each answered by respond() as if it had come
   * alone, all at once; the batch answers when the last of them has.
   */
  function answerAll(calls: BatchCallWire[], url: (path: string) => string): Promise<Answer[]> {
    if (calls.length > MAX_BATCH)
      throw new ConnectError(`a batch holds at most ${MAX_BATCH} calls`, Code.InvalidArgument);
    return Promise.all(
      calls.map((c) => {
        const route = c.path === BATCH_PATH ? undefined : routes.get(c.path);
        if (!route) return unimplemented(c.path);
        return respond(route, c.headers, url(c.path), c.input, c.timeoutMs || undefined);
      }),
    );
  }

  /** The BatchService for every other client (gRPC, Connect JSON), through connect-node. */
  const batch: ServiceImpl<typeof BatchService> = {
    async call(req, ctx) {
      const results = await answerAll(req.calls, (path) => ctx.url.replace(BATCH_PATH, path));
      return { results };
    },
  };

  /** The services' own clients' batches: the envelope read and written by hand (batch-codec.ts). */
  async function respondToBatch(headers: http2.IncomingHttpHeaders, body: Uint8Array): Promise<Answer> {
    try {
      let calls: BatchCallWire[];
      try {
        calls = decodeBatchRequest(body);
      } catch (err) {
        throw new ConnectError("the batch does not parse", Code.InvalidArgument, undefined, undefined, err);
      }
      const origin = `http://${headers[":authority"] ?? "localhost"}`;
      const results = await answerAll(calls, (path) => origin + path);
      return {
        status: 200,
        headers: { "content-type": "application/proto" },
        body: encodeBatchResponse(results),
      };
    } catch (err) {
      return errorAnswer(err);
    }
  }

  /** The open channels (channel.ts), each able to drain (answer what it read, then end), by session. */
  const channels = new Map<() => void, http2.Http2Session | undefined>();

  /**
   * A client's batch channel: each frame read is answered as a batch (respondToBatch), in whatever order
   * they finish. It ends once the client has ended its side or the server is stopping (drainChannels),
   * and every frame read by then has its answer; a frame that comes while it drains is answered
   * Unavailable without being run, so the client may retry its reads.
   */
  function openChannel(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) {
    res.writeHead(200, { "content-type": "application/proto" });
    const reader = new FrameReader(false);
    let running = 0;
    let draining = false;
    let ended = false;
    const answer = (id: number, a: Answer) => {
      if (!ended && !res.stream.destroyed) res.write(answerFrame(id, a.status, a.body));
    };
    const drain = () => {
      draining = true;
      if (running === 0 && !ended) {
        ended = true;
        res.end();
        // The client ends its side when it sees ours end; one that does not is not waited for long.
        setTimeout(() => res.stream.close(), 1000).unref();
      }
    };
    channels.set(drain, req.stream.session);
    res.stream.on("close", () => channels.delete(drain));
    req.on("data", (chunk: Buffer) => {
      let frames: Frame[];
      try {
        frames = reader.push(chunk);
      } catch {
        res.stream.close(http2constants.NGHTTP2_PROTOCOL_ERROR);
        return;
      }
      for (const frame of frames) {
        if (draining) {
          answer(frame.id, errorAnswer(new ConnectError("the service is stopping", Code.Unavailable)));
          continue;
        }
        running++;
        respondToBatch(req.headers, frame.body).then((a) => {
          answer(frame.id, a);
          running--;
          if (draining) drain();
        });
      }
    });
    req.on("end", drain);
  }

  /**
   * Ends the open channels once their frames are answered: every one (the server is stopping), or those
   * of one session (it is being closed for its age).
   */
  const drainChannels = (session?: http2.Http2Session) => {
    for (const [drain, of] of channels) if (!session || of === session) drain();
  };

  return { record, handle, batch, drainChannels };
}

/** The innermost step of the interceptor chain: the implementation itself. */
function invoke(route: Route, ctx: Context) {
  return async (req: UnaryRequest): Promise<UnaryResponse> => {
    const result = await route.impl(req.message, ctx);
    const output = route.method.output;
    return {
      stream: false,
      service: route.service,
      method: route.method,
      // Getters, so that Headers objects are made only for an interceptor that reads them.
      get header() {
        return ctx.responseHeader;
      },
      get trailer() {
        return ctx.responseTrailer;
      },
      // What the implementation returned, as is: the generated encoder takes a message's init shape (an
      // unset field undefined); create() walked the descriptor for every answer.
      message: (isMessage(result, output) || codecOf(output).kind === "generated"
        ? (result ?? {})
        : create(output, result as never)) as MessageShape<typeof output>,
    };
  };
}

function request(route: Route, ctx: Context, message: MessageShape<DescMethodUnary["input"]>): UnaryRequest {
  return {
    stream: false,
    service: route.service,
    method: route.method,
    requestMethod: "POST",
    url: ctx.url,
    get signal() {
      return ctx.signal;
    },
    get header() {
      return ctx.requestHeader;
    },
    get contextValues() {
      return ctx.values;
    },
    message,
  };
}

type Context = HandlerContext & { abort(): void; touchedResponseHeader(): Headers | undefined };

/** A HandlerContext whose signal and Headers objects exist only once something reads them. */
function context(
  route: Route,
  headers: http2.IncomingHttpHeaders,
  url: string,
  timeoutMs: number | undefined,
): Context {
  let controller: AbortController | undefined;
  let requestHeader: Headers | undefined;
  let responseHeader: Headers | undefined;
  let responseTrailer: Headers | undefined;
  let values: ContextValues | undefined;
  return {
    method: route.method as DescMethod,
    service: route.service,
    requestMethod: "POST",
    protocolName: "connect",
    url,
    timeoutMs: () => timeoutMs,
    get signal() {
      controller ??= new AbortController();
      return controller.signal;
    },
    get requestHeader() {
      requestHeader ??= toHeaders(headers);
      return requestHeader;
    },
    get responseHeader() {
      responseHeader ??= new Headers();
      return responseHeader;
    },
    get responseTrailer() {
      responseTrailer ??= new Headers();
      return responseTrailer;
    },
    get values() {
      values ??= createContextValues();
      return values;
    },
    abort: () => controller?.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded)),
    touchedResponseHeader: () => responseHeader,
  };
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
