/** One failure of a detail, as the API names it: `body.title`, `query.limit`, `headers.idempotency-key`. */
export interface FunilErrorDetail {
  path: string;
  message: string;
}

/**
 * Every failure of a call, typed: an answer of the API (its `code` and
 * `status`, docs/api/conventions.md §Errors) or a failure to get one, with
 * status 0 and code `network_error`, `timeout` or `aborted`.
 */
export class FunilError extends Error {
  override readonly name = "FunilError";
  readonly code: string;
  readonly status: number;
  readonly details: FunilErrorDetail[];
  /** The x-request-id of the answer, to quote when reporting a problem. */
  readonly requestId: string | undefined;
  /** Seconds the API asked to wait (429, 503). */
  readonly retryAfter: number | undefined;

  constructor(init: {
    code: string;
    status: number;
    message: string;
    details?: FunilErrorDetail[];
    requestId?: string;
    retryAfter?: number;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status;
    this.details = init.details ?? [];
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
  }

  /** The error an answer that is not a 2xx stands for, from its body when it is the API's error body. */
  static of(response: Response, body: unknown): FunilError {
    const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)
      ?.error;
    return new FunilError({
      code: typeof error?.code === "string" ? error.code : `http_${response.status}`,
      status: response.status,
      message: typeof error?.message === "string" ? error.message : response.statusText || "request failed",
      details: Array.isArray(error?.details) ? (error.details as FunilErrorDetail[]) : [],
      requestId: response.headers.get("x-request-id") ?? undefined,
      retryAfter: retryAfterOf(response),
    });
  }
}

/** retry-after in seconds (a number of seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterOf(response: Response): number | undefined {
  const value = response.headers.get("retry-after");
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - Date.now()) / 1000);
}
