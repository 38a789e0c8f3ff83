import { runService, stoppingWithin } from "@funil/rpc";
import { timelineConfig } from "./config.js";
import { start } from "./server.js";

runService(timelineConfig, stoppingWithin("timeline", start));
