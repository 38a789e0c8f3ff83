import { runService, stoppingWithin } from "@funil/rpc";
import { gatewayConfig } from "./config.js";
import { startGateway } from "./server.js";

runService(gatewayConfig, stoppingWithin("gateway", startGateway));
