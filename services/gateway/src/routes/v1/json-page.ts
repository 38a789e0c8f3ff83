import type { FastifyReply } from "fastify";

const OPEN = Buffer.from('{"data":');

/**
 * A list page its service sent already written as the API's JSON (a `data_json` array): answered as it
 * came, with the next cursor added; nothing is decoded, mapped or serialized on the way.
 */
export function sendJsonPage(reply: FastifyReply, dataJson: Uint8Array, nextCursor: string | undefined) {
  const close = Buffer.from(
    `,"nextCursor":${nextCursor === undefined ? "null" : JSON.stringify(nextCursor)}}`,
  );
  return reply.type("application/json; charset=utf-8").send(Buffer.concat([OPEN, dataJson, close]));
}

/**
 * A list page whose items its service sent each already written as the API's JSON (strings: a string is
 * held in the heap, where many small buffers would each be memory outside it for the GC to sweep),
 * answered as they came with the next cursor added.
 */
export function sendJsonItems(reply: FastifyReply, items: readonly string[], nextCursor: string | null) {
  return reply
    .type("application/json; charset=utf-8")
    .send(
      `{"data":[${items.join(",")}],"nextCursor":${nextCursor === null ? "null" : JSON.stringify(nextCursor)}}`,
    );
}
