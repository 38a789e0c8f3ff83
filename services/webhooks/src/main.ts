import { runService, stoppingWithin } from "@funil/rpc";
import { webhooksConfig } from "./config.js";
import { start } from "./server.js";

runService(webhooksConfig, stoppingWithin("webhooks", start));
