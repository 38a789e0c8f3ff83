import type { FastifyReply } from "fastify";

/**
 * A list page its service sent already written as the API's JSON (a `data_json` array), answered as it came
 * with the next cursor added: nothing is decoded, mapped or serialized on the way. A string, not bytes:
 * buffers (a page of 100 events is ~100 KB), each memory outside the heap, cost the gateway more garbage
 * collection than the copies they spared (bench/RESULTS-scheduling.md, bench/RESULTS-webhooks-reads.md).
 */
export function sendJsonPage(reply: FastifyReply, dataJson: string, nextCursor: string | undefined) {
  return sendPage(
    reply,
    `{"data":${dataJson},"nextCursor":${nextCursor === undefined ? "null" : JSON.stringify(nextCursor)}}`,
  );
}

/** A list page whose items its service sent each already written as the API's JSON (sendJsonPage). */
export function sendJsonItems(reply: FastifyReply, items: readonly string[], nextCursor: string | null) {
  return sendJsonPage(reply, `[${items.join(",")}]`, nextCursor ?? undefined);
}

/**
 * A list page whose reply's API JSON is the page itself (`data` and `nextCursor`), as apiJsonCall wrote it
 * from the reply's bytes: sent as it is.
 */
export function sendPage(reply: FastifyReply, pageJson: string | Buffer) {
  return reply.type("application/json; charset=utf-8").send(pageJson);
}
