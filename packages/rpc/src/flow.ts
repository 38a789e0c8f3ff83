import type * as http2 from "node:http2";

/**
 * HTTP/2 flow control of every RPC session, at both ends: how much a peer may send on a stream, and on
 * the whole session, before the reader says it has read it. At HTTP/2's default of 64 KiB a list page
 * of 55 KB (GET /events' 100 events), a few in flight on the batch channel, stops at the window and waits
 * for the reader's WINDOW_UPDATE on every answer: a write and a wake-up more at each end, and the page's
 * rest held meanwhile (bench/flow-window.mjs measures it; bench/RESULTS-webhooks-reads.md). The reader
 * drains every stream as its data comes, so the window bounds nothing it keeps.
 */
const STREAM_WINDOW_BYTES = 1024 * 1024;
/** The session's window: the batch channel and the plain calls of a session share it. */
const SESSION_WINDOW_BYTES = 8 * 1024 * 1024;

/** The SETTINGS each end sends: the window of each stream the peer opens or answers. */
export const flowSettings: http2.Settings = { initialWindowSize: STREAM_WINDOW_BYTES };

/** Widens a session's own window, which SETTINGS leave at 64 KiB; once the session is connected. */
export function widenSessionWindow(s: http2.Http2Session) {
  s.setLocalWindowSize(SESSION_WINDOW_BYTES);
}
