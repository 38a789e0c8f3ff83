import type { SERVICES } from "@funil/contracts";
import { type Clients, describeError } from "@funil/rpc";

/**
 * What scheduling asks crm, over RPC (crm owns contacts, deals and members).
 * A missing record is undefined/false; crm being down is thrown as it came
 * (the gateway answers 503 and nothing was written).
 */
export function crmDirectory(crm: Clients<typeof SERVICES.crm>) {
  async function orMissing<T>(call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (err) {
      if (describeError(err).code === "not_found") return undefined;
      throw err;
    }
  }
  return {
    /** The contact's name (null when it has none), or undefined when there is no such contact. */
    async contact(workspaceId: string, id: string): Promise<{ name: string | null } | undefined> {
      const res = await orMissing(() => crm.contacts.getContact({ workspaceId, id }));
      return res?.contact ? { name: res.contact.name ?? null } : undefined;
    },

    async opportunityExists(workspaceId: string, id: string): Promise<boolean> {
      return (await orMissing(() => crm.opportunities.getOpportunity({ workspaceId, id }))) !== undefined;
    },

    /** Ids of the workspace's active members. */
    async activeMembers(workspaceId: string): Promise<Set<string>> {
      const res = await crm.members.listMembers({ workspaceId });
      return new Set(res.data.filter((m) => m.active).map((m) => m.id));
    },
  };
}
export type CrmDirectory = ReturnType<typeof crmDirectory>;
