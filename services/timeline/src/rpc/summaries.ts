import type { ServiceImpl } from "@connectrpc/connect";
import type { SummaryService } from "@funil/contracts";
import { check, parseTimestamp, ref, timestamp, z } from "@funil/schemas";
import type { SummaryStore } from "../store/summaries.js";
import { touchesToProto } from "./wire.js";

const contactRequest = z.strictObject({ contactId: ref });
const dealRequest = z.strictObject({
  opportunityId: ref,
  contactId: ref.optional(),
  since: timestamp.optional(),
});

export function summaryService(deps: { summaries: SummaryStore }): ServiceImpl<typeof SummaryService> {
  const { summaries } = deps;
  return {
    async getContactSummary(req) {
      const { contactId } = check(contactRequest, { contactId: req.contactId }, "path");
      return { touches: touchesToProto(await summaries.contactTouches(req.workspaceId, contactId)) };
    },

    /**
     * A deal's touches count from its creation (API.md §6), for its contact:
     * as the caller gives them, else as opportunity.created made them known.
     */
    async getDealSummary(req) {
      const r = check(
        dealRequest,
        { opportunityId: req.opportunityId, contactId: req.contactId, since: req.since },
        "path",
      );
      const [deal, lastActivityAt] = await Promise.all([
        r.contactId && r.since
          ? { contactId: r.contactId, createdAt: parseTimestamp(r.since)! }
          : summaries.deal(req.workspaceId, r.opportunityId),
        summaries.lastActivity(req.workspaceId, r.opportunityId),
      ]);
      const touches = deal && (await summaries.touchesSince(req.workspaceId, deal.contactId, deal.createdAt));
      return {
        dealKnown: deal !== undefined,
        touches: touches ? touchesToProto(touches) : undefined,
        lastActivityAt: lastActivityAt?.toISOString(),
      };
    },
  };
}
