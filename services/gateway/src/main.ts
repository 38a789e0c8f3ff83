import { loadConfig, runMain } from "@funil/config";
import { gatewayConfig } from "./config.js";
import { startGateway } from "./server.js";

runMain(async () => {
  const gateway = await startGateway(loadConfig(gatewayConfig));
  const stop = () => {
    gateway.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
});
