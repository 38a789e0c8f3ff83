import { ContactService } from "./gen/funil/crm/v1/contacts_pb.js";
import { CustomFieldService } from "./gen/funil/crm/v1/custom_fields_pb.js";
import { OpportunityService } from "./gen/funil/crm/v1/deals_pb.js";
import { FunnelService } from "./gen/funil/crm/v1/funnel_pb.js";
import { MemberService } from "./gen/funil/crm/v1/members_pb.js";
import { NoteService } from "./gen/funil/crm/v1/notes_pb.js";
import { PipelineService } from "./gen/funil/crm/v1/pipelines_pb.js";
import { TaskService } from "./gen/funil/crm/v1/tasks_pb.js";
import { LearnerService } from "./gen/funil/learning/v1/learners_pb.js";
import { AppointmentService } from "./gen/funil/scheduling/v1/appointments_pb.js";
import { CalendarService } from "./gen/funil/scheduling/v1/calendars_pb.js";
import { InteractionService } from "./gen/funil/timeline/v1/interactions_pb.js";
import { SummaryService } from "./gen/funil/timeline/v1/summaries_pb.js";
import { WebhookService } from "./gen/funil/webhooks/v1/webhooks_pb.js";

/**
 * Every backend service and the Connect services it serves, written once: the
 * gateway makes one client per entry (found at `<NAME>_URL`), a service's
 * routes implement exactly its entry, and `npm start` starts each name. A new
 * service adds one line here.
 */
export const SERVICES = {
  crm: {
    contacts: ContactService,
    customFields: CustomFieldService,
    members: MemberService,
    pipelines: PipelineService,
    opportunities: OpportunityService,
    funnel: FunnelService,
    tasks: TaskService,
    notes: NoteService,
  },
  timeline: {
    interactions: InteractionService,
    summaries: SummaryService,
  },
  scheduling: { calendars: CalendarService, appointments: AppointmentService },
  webhooks: {
    webhooks: WebhookService,
  },
  learning: {
    learners: LearnerService,
  },
} as const;
export type ServiceName = keyof typeof SERVICES;
