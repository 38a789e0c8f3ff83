import { runService, stoppingWithin } from "@funil/rpc";
import { crmConfig } from "./config.js";
import { start } from "./server.js";

runService(crmConfig, stoppingWithin("crm", start));
