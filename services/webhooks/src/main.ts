import { runService } from "@funil/rpc";
import { webhooksConfig } from "./config.js";
import { start } from "./server.js";

runService(webhooksConfig, start);
