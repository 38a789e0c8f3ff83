import { runService } from "@funil/rpc";
import { gatewayConfig } from "./config.js";
import { startGateway } from "./server.js";

runService(gatewayConfig, startGateway);
