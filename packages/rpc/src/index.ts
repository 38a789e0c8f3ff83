// First: protobuf-es's string encoding, for every message this process writes.
import "./text-encoding.js";

export { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
export { apiJsonCall } from "./api-json-binary.js";
export { parseBaseUrls } from "./balancer.js";
export * from "./client.js";
export * from "./cursor.js";
export * from "./erasures.js";
export * from "./errors.js";
export * from "./fields.js";
export * from "./health.js";
export * from "./idempotent.js";
export * from "./json.js";
export { registerRpcServerMetrics } from "./metrics.js";
export {
  encodedBytesOf,
  encodedMessage,
  type RawReadable,
  type RowList,
  rowList,
  rowListPage,
} from "./row-pages.js";
export * from "./server.js";
export * from "./service.js";
export * from "./startup.js";
