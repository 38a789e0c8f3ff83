import { runService } from "@funil/rpc";
import { timelineConfig } from "./config.js";
import { start } from "./server.js";

runService(timelineConfig, start);
