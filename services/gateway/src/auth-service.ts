import type { ConnectRouter } from "@connectrpc/connect";
import { AuthService } from "@funil/contracts";
import type { KeyStore } from "./store/keys.js";

/**
 * The internal Auth service (docs/api/webhooks.md §Scope revoked): a key's current scopes, read from
 * the database at every call (no cache), so a revocation is never missed.
 */
export const authServiceRoutes = (store: KeyStore) => (router: ConnectRouter) => {
  router.service(AuthService, {
    async getKey(req) {
      const key = await store.getKey(req.keyId);
      if (!key || key.revokedAt)
        return { active: false, workspaceId: key?.workspaceId ?? "", scopes: [], operator: false };
      return { active: true, workspaceId: key.workspaceId, scopes: key.scopes, operator: key.operator };
    },
  });
};
