// Generated code lives under gen/ (npm run generate); this file re-exports it, with the list of services.
export * from "./gen/funil/crm/v1/contacts_pb.js";
export * from "./gen/funil/crm/v1/custom_fields_pb.js";
export * from "./gen/funil/crm/v1/deals_pb.js";
export * from "./gen/funil/crm/v1/funnel_pb.js";
export * from "./gen/funil/crm/v1/members_pb.js";
export * from "./gen/funil/crm/v1/notes_pb.js";
export * from "./gen/funil/crm/v1/pipelines_pb.js";
export * from "./gen/funil/crm/v1/tasks_pb.js";
export * from "./gen/funil/gateway/v1/auth_pb.js";
export * from "./gen/funil/health/v1/health_pb.js";
export * from "./gen/funil/learning/v1/learners_pb.js";
export * from "./gen/funil/scheduling/v1/appointments_pb.js";
export * from "./gen/funil/scheduling/v1/calendars_pb.js";
export * from "./gen/funil/timeline/v1/interactions_pb.js";
export * from "./gen/funil/timeline/v1/summaries_pb.js";
export * from "./gen/funil/webhooks/v1/webhooks_pb.js";
export * from "./services.js";
