import createClient, { type FetchResponse, type MaybeOptionalInit } from "openapi-fetch";
import type { RequiredKeysOf } from "openapi-typescript-helpers";
import { FunilError } from "./errors.js";
import { OPERATION_ROUTES, type paths } from "./gen/openapi.js";
import { RetryBudget, type RetryOptions, retryingFetch } from "./retry.js";

export interface FunilOptions {
  /** The API key (`fnl_…`), sent as a bearer token. */
  apiKey: string;
  /** Where the gateway answers, e.g. `https://funil.example.com`. */
  baseUrl: string;
  /** Per try, in ms (a retried call may take longer in all). Default 30 000; 0 for none. */
  timeoutMs?: number;
  retry?: RetryOptions;
  /** Another fetch (tests, proxies); default the platform's. */
  fetch?: typeof fetch;
  /** Told before each retry. */
  onRetry?: (info: { operation: string; attempt: number; delayMs: number; reason: string }) => void;
}

/** What each call may add to the operation's own parameters and body. */
export interface CallOptions {
  /** The Idempotency-Key of a POST; one is generated when none is given, the same on every try. */
  idempotencyKey?: string;
  /** Overrides the client's per-try timeout for this call. */
  timeoutMs?: number;
  /** Aborts this call, its retries and waits included. */
  signal?: AbortSignal;
  /** Sees the final answer: its status (POST /contacts: 201 created, 200 updated) and headers. */
  onResponse?: (response: Response) => void;
}

type Routes = typeof OPERATION_ROUTES;
/** Every operation of the API, by its operationId: `upsertContact`, `getOpportunity`, … */
export type OperationName = keyof Routes;
type Path<K extends OperationName> = Routes[K][1];
type Method<K extends OperationName> = Routes[K][0];
type Init<K extends OperationName> = NonNullable<MaybeOptionalInit<paths[Path<K>], Method<K>>>;
/** What an operation answers on success. */
export type OperationData<K extends OperationName> = Exclude<
  FetchResponse<Extract<paths[Path<K>][Method<K>], object>, object, "application/json">["data"],
  undefined
>;
/** An operation's parameters (`params.path`, `params.query`) and `body`, with the CallOptions. */
export type OperationInit<K extends OperationName> = Init<K> & CallOptions;
type Args<K extends OperationName> =
  RequiredKeysOf<Init<K>> extends never ? [init?: OperationInit<K>] : [init: OperationInit<K>];

/** The operations whose answer is a page: `{ data: [...], nextCursor }`. */
export type ListName = {
  [K in OperationName]: OperationData<K> extends { data: unknown[]; nextCursor: string | null } ? K : never;
}[OperationName];
type Item<K extends ListName> = OperationData<K> extends { data: Array<infer T> } ? T : never;

export type Funil = { [K in OperationName]: (...args: Args<K>) => Promise<OperationData<K>> } & {
  /**
   * Every item of a list, page after page (`for await`): the cursor is
   * followed until the last page. `pageSize` is the `limit` of each page.
   */
  list<K extends ListName>(
    operation: K,
    init?: OperationInit<K> & { pageSize?: number },
  ): AsyncGenerator<Item<K>, void, undefined>;
};

const DEFAULT_RETRY: Required<RetryOptions> = {
  maxRetries: 4,
  baseDelayMs: 200,
  maxDelayMs: 20_000,
  budgetRatio: 0.2,
  minRetriesPerSecond: 2,
};

/**
 * A fresh Idempotency-Key, a version 4 UUID. Browsers give `randomUUID` to
 * secure contexts only (https, localhost): a page served over plain http
 * elsewhere builds it from `getRandomValues`, which every context has.
 */
function newKey(): string {
  if (typeof globalThis.crypto.randomUUID === "function") return globalThis.crypto.randomUUID();
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A client of the Funil API: one method per operation, typed from the API's OpenAPI document. */
export function createFunil(options: FunilOptions): Funil {
  const retry = { ...DEFAULT_RETRY, ...options.retry };
  const budget = new RetryBudget(retry.budgetRatio, retry.minRetriesPerSecond);
  const platformFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const api = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    headers: { authorization: `Bearer ${options.apiKey}` },
  });

  async function call(operation: OperationName, init: Record<string, unknown> = {}) {
    const [method, path, keyed] = OPERATION_ROUTES[operation];
    const { idempotencyKey, timeoutMs, signal, onResponse, ...rest } = init as CallOptions &
      Record<string, unknown>;
    const fetchOnce = retryingFetch(platformFetch, {
      retry,
      budget,
      timeoutMs: timeoutMs ?? options.timeoutMs ?? 30_000,
      signal,
      idempotencyKey: keyed ? (idempotencyKey ?? newKey()) : undefined,
      // A POST without a key may have done its work before a 503 or a lost answer: only a 429 is retried.
      repeatable: method !== "post" || keyed,
      onRetry: options.onRetry && ((info) => options.onRetry!({ operation, ...info })),
    });
    const res = await api.request(method as never, path as never, { ...rest, fetch: fetchOnce } as never);
    const { data, error, response } = res as { data?: unknown; error?: unknown; response: Response };
    onResponse?.(response);
    if (!response.ok) throw FunilError.of(response, error);
    return data;
  }

  async function* list(operation: ListName, init: Record<string, unknown> & { pageSize?: number } = {}) {
    const { pageSize, ...rest } = init;
    const params = (rest.params ?? {}) as { query?: Record<string, unknown> };
    let cursor: string | undefined;
    do {
      const query = {
        ...params.query,
        ...(pageSize ? { limit: pageSize } : {}),
        ...(cursor ? { cursor } : {}),
      };
      const page = (await call(operation, { ...rest, params: { ...params, query } })) as {
        data: unknown[];
        nextCursor: string | null;
      };
      yield* page.data;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  const funil: Record<string, unknown> = { list };
  for (const operation of Object.keys(OPERATION_ROUTES) as OperationName[])
    funil[operation] = (init?: Record<string, unknown>) => call(operation, init);
  return funil as Funil;
}
