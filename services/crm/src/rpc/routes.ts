import type { Clock } from "@funil/config";
import { SERVICES } from "@funil/contracts";
import type { Sql } from "@funil/db";
import { routesOf } from "@funil/rpc";
import type { ContactStore } from "../store/contacts.js";
import type { CustomFieldStore } from "../store/custom-fields.js";
import type { DealStore } from "../store/deals.js";
import type { FunnelStore } from "../store/funnel.js";
import type { MemberStore } from "../store/members.js";
import type { NoteStore } from "../store/notes.js";
import type { PipelineStore } from "../store/pipelines.js";
import type { TaskStore } from "../store/tasks.js";
import { contactService } from "./contacts.js";
import { customFieldService } from "./custom-fields.js";
import { funnelService } from "./funnel.js";
import { memberService } from "./members.js";
import { noteService } from "./notes.js";
import { opportunityService } from "./opportunities.js";
import { pipelineService } from "./pipelines.js";
import { taskService } from "./tasks.js";

export interface CrmDeps {
  /** The database the stores write to, where Idempotency-Keys are claimed. */
  sql: Sql;
  contacts: ContactStore;
  customFields: CustomFieldStore;
  members: MemberStore;
  pipelines: PipelineStore;
  deals: DealStore;
  funnel: FunnelStore;
  tasks: TaskStore;
  notes: NoteStore;
  clock: Clock;
}

/** crm's entry of SERVICES, implemented: every Connect service it serves. */
export function routes(deps: CrmDeps) {
  return routesOf(SERVICES.crm, {
    contacts: contactService(deps),
    customFields: customFieldService(deps),
    members: memberService(deps),
    pipelines: pipelineService(deps),
    opportunities: opportunityService(deps),
    funnel: funnelService(deps),
    tasks: taskService(deps),
    notes: noteService(deps),
  });
}
