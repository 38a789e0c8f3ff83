import type { FastifyReply } from "fastify";

/**
 * A list page its service sent already written as the API's JSON (a `data_json` array), answered as it came
 * with the next cursor added: nothing is decoded, mapped or serialized on the way. A string, not bytes: a
 * page of 100 events is ~100 KB, and buffers that size, each memory outside the heap, made a third of the
 * gateway's CPU garbage collection (bench/RESULTS-webhooks-reads.md).
 */
export function sendJsonPage(reply: FastifyReply, dataJson: string, nextCursor: string | undefined) {
  return reply
    .type("application/json; charset=utf-8")
    .send(
      `{"data":${dataJson},"nextCursor":${nextCursor === undefined ? "null" : JSON.stringify(nextCursor)}}`,
    );
}

/** A list page whose items its service sent each already written as the API's JSON (sendJsonPage). */
export function sendJsonItems(reply: FastifyReply, items: readonly string[], nextCursor: string | null) {
  return sendJsonPage(reply, `[${items.join(",")}]`, nextCursor ?? undefined);
}
