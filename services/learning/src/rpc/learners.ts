import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import { type LearnerService, ListLearnersRequestSchema, ListLearnersResponseSchema } from "@funil/contracts";
import type { FiltersOf } from "@funil/db";
import { notFound } from "@funil/errors";
import { plainOf, rowList } from "@funil/rpc";
import { check, idParam, instant, learnerQuery, listLearnersQuery } from "@funil/schemas";
import { fold } from "../messages.js";
import type { LearnerRecord, LearnerStore } from "../store/learners.js";
import { windowStart } from "../window.js";
import { learnerDetailToProto, learnerToProto } from "./wire.js";

const LIST = "learners";

/** Learner usage (docs/api/learners.md §GET /platform/users, §GET /platform/users/{id}): global data, no workspace. */
export function learnerService(deps: {
  learners: LearnerStore;
  clock: Clock;
}): ServiceImpl<typeof LearnerService> {
  const { learners, clock } = deps;
  const statement = (
    _platform: string,
    filters: FiltersOf<typeof listLearnersQuery>,
    take: number,
    after: [Date, string] | undefined,
  ) =>
    learners.listQuery(
      {
        q: filters.q === undefined ? undefined : fold(filters.q),
        activeSince: instant(filters.activeSince),
        activeBefore: instant(filters.activeBefore),
      },
      take,
      after,
    );
  // Pages are written from the statement's raw rows (packages/rpc row-pages.ts); the object path stays for the rest.
  const list = rowList({
    list: LIST,
    query: listLearnersQuery,
    defaultLimit: 50,
    // One Date per page, for the next cursor.
    sortKey: (l: LearnerRecord) => new Date(l.createdAt),
    sortColumn: () => "createdAt",
    response: ListLearnersResponseSchema,
    statement,
    toMessage: learnerToProto,
  });
  return {
    // The platform's data is one for every operator workspace, and so are its cursors.
    listLearners: (req) => list("platform", plainOf(ListLearnersRequestSchema, req)),

    async getLearner(req) {
      const { id } = check(idParam, { id: req.id }, "path");
      const { days } = check(learnerQuery, req.days === undefined ? {} : { days: req.days }, "query");
      const learner = await learners.get(id, days, windowStart(clock.now(), days));
      if (!learner) throw notFound("learner");
      return { learner: learnerDetailToProto(learner) };
    },
  };
}
