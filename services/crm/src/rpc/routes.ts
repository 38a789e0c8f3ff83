import type { ConnectRouter } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import {
  ContactService,
  CustomFieldService,
  FunnelService,
  MemberService,
  NoteService,
  OpportunityService,
  PipelineService,
  TaskService,
} from "@funil/contracts";
import type { ContactStore } from "../store/contacts.js";
import type { CustomFieldStore } from "../store/custom-fields.js";
import type { DealStore } from "../store/deals.js";
import type { FunnelStore } from "../store/funnel.js";
import type { MemberStore } from "../store/members.js";
import type { NoteStore } from "../store/notes.js";
import type { PipelineStore } from "../store/pipelines.js";
import type { TaskStore } from "../store/tasks.js";
import { contactService } from "./contacts.js";
import { funnelService, opportunityService, pipelineService } from "./deals.js";
import { noteService, taskService } from "./tasks.js";
import { customFieldService, memberService } from "./workspace.js";

export interface CrmDeps {
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

export function routes(deps: CrmDeps) {
  return (router: ConnectRouter) => {
    router.service(ContactService, contactService(deps));
    router.service(CustomFieldService, customFieldService(deps));
    router.service(MemberService, memberService(deps));
    router.service(PipelineService, pipelineService(deps));
    router.service(OpportunityService, opportunityService(deps));
    router.service(FunnelService, funnelService(deps));
    router.service(TaskService, taskService(deps));
    router.service(NoteService, noteService(deps));
  };
}
