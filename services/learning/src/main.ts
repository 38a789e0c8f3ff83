import { runService, stoppingWithin } from "@funil/rpc";
import { learningConfig } from "./config.js";
import { start } from "./server.js";

runService(learningConfig, stoppingWithin("learning", start));
