export {
  type CallOptions,
  createFunil,
  type Funil,
  type FunilOptions,
  type ListName,
  type OperationData,
  type OperationInit,
  type OperationName,
} from "./client.js";
export { FunilError, type FunilErrorDetail } from "./errors.js";
export type { components, operations, paths } from "./gen/openapi.js";
export { backoff, RetryBudget, type RetryOptions } from "./retry.js";
