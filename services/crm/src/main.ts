import { loadConfig, runMain } from "@funil/config";
import { startCrm } from "./app.js";
import { crmConfig } from "./config.js";

runMain(async () => {
  const crm = await startCrm(loadConfig(crmConfig));
  const stop = () => {
    crm.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
});
