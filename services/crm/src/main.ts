import { runService } from "@funil/rpc";
import { crmConfig } from "./config.js";
import { start } from "./server.js";

runService(crmConfig, start);
