import { runService, stoppingWithin } from "@funil/rpc";
import { schedulingConfig } from "./config.js";
import { start } from "./server.js";

runService(schedulingConfig, stoppingWithin("scheduling", start));
