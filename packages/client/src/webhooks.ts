/**
 * The webhook signature check (docs/api/webhooks.md), for a receiver in
 * Node: its own entry point, so that the client's main one needs nothing
 * beyond fetch and runs in browsers.
 */
export {
  parseSignatureHeader,
  signWebhook,
  type VerifyFailure,
  type VerifyOptions,
  verifyWebhookSignature,
  WebhookSignatureError,
} from "@funil/webhook-verify";
