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
     * A deal's touches count from its creation (docs/api/deals.md §GET /opportunities/{id}), for its contact:
     * as the caller gives them, else as opportunity.created made them known.
     */
    async getDealSummary(req) {
      const r = check(
        dealRequest,
        { opportunityId: req.opportunityId, contactId: req.contactId, since: req.since },
        "path",
      );
      const given =
        r.contactId && r.since ? { contactId: r.contactId, createdAt: parseTimestamp(r.since)! } : undefined;
      const summary = await summaries.dealSummary(req.workspaceId, r.opportunityId, given);
      return {
        dealKnown: summary.known || given !== undefined,
        touches: summary.touches ? touchesToProto(summary.touches) : undefined,
        lastActivityAt: summary.lastActivity?.toISOString(),
      };
    },
  };
}
