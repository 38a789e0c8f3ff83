import { runService } from "@funil/rpc";
import { learningConfig } from "./config.js";
import { start } from "./server.js";

runService(learningConfig, start);
