import * as http2 from "node:http2";
import {
  create,
  type DescMessage,
  type DescMethodUnary,
  fromBinary,
  isMessage,
  type MessageInitShape,
  toBinary,
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
import { toHeaders } from "./headers.js";

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
        message: isMessage(input, method.input) ? input : create(method.input, input),
      };
      const send = async (r: UnaryRequest<I, O>): Promise<UnaryResponse<I, O>> => {
        const extra = headers ?? (header ? new Headers(header) : undefined);
        const answer = await call(
          session(),
          path,
          toBinary(method.input, r.message),
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
          message: fromBinary(method.output, answer.body),
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
    let stream: http2.ClientHttp2Stream;
    let settled = false;
    const finish = (err: ConnectError | undefined, answer?: Answer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (signal !== NEVER) signal.removeEventListener("abort", onAbort);
      if (err) {
        if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
        reject(err);
      } else resolve(answer!);
    };
    const onAbort = () => finish(new ConnectError("the call was cancelled", Code.Canceled));
    const timer = setTimeout(
      () => finish(new ConnectError("the operation timed out", Code.DeadlineExceeded)),
      timeoutMs,
    );
    try {
      stream = session.request(headers);
    } catch (err) {
      clearTimeout(timer);
      reject(unavailable(err));
      return;
    }
    if (signal !== NEVER) {
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
    }
    let status = 0;
    let responseHeaders: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      responseHeaders = h;
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () =>
      finish(undefined, {
        status,
        headers: responseHeaders,
        body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
      }),
    );
    stream.on("error", (err) => finish(unavailable(err)));
    stream.on("close", () => finish(unavailable(new Error(`stream closed (code ${stream.rstCode})`))));
    stream.end(body);
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
