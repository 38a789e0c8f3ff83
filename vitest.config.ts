import { defineConfig } from "vitest/config";

// The FUNIL_ENV of the test run (databases, streams, subjects): FUNIL_TEST_ENV lets two checkouts on one
// machine run their suites at once without dropping each other's databases.
process.env.FUNIL_TEST_ENV ||= "test";
// Every stack a test starts (the main one, the chaos one, gateway copies) runs six or seven processes on
// one PostgreSQL server with max_connections 100: small pools keep the whole run well under it.
process.env.DATABASE_POOL_MAX ||= "4";

export default defineConfig({
  test: {
    include: ["packages/*/src/**/*.test.ts", "services/*/src/**/*.test.ts", "tests/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/dist/**"],
    globalSetup: ["tests/setup/stack.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ["default", "./tests/setup/summary-reporter.ts"],
  },
});
