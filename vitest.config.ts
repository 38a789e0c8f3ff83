import { defineConfig } from "vitest/config";

// The FUNIL_ENV of the test run (databases, streams, subjects): FUNIL_TEST_ENV lets two checkouts on one
// machine run their suites at once without dropping each other's databases.
process.env.FUNIL_TEST_ENV ||= "test";
// Every stack a test starts (the run's own, the chaos and PgBouncer ones) runs six processes on one
// PostgreSQL server with max_connections 100, beside a developer's `npm start`: with pools of 2 a stack
// holds at most 22 connections (docs/operations.md §Connections, tests/e2e/connections.test.ts).
process.env.DATABASE_POOL_MAX ||= "2";
// Every process of a test run (its stacks too, through their environment) refuses an RPC or Redis call
// made while a PostgreSQL transaction is open (packages/db/src/transactions.ts).
process.env.FUNIL_CHECK_TRANSACTIONS ||= "true";

export default defineConfig({
  test: {
    include: [
      "packages/*/src/**/*.test.ts",
      "services/*/src/**/*.test.ts",
      "tests/**/*.test.ts",
      "examples/**/*.test.ts",
    ],
    exclude: ["**/node_modules/**", "**/dist/**"],
    globalSetup: ["tests/setup/stack.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ["default", "./tests/setup/summary-reporter.ts"],
  },
});
