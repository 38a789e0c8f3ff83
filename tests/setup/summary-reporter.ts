import type { Reporter, TestModule } from "vitest/node";

/**
 * Ends the run with one plain line, `N passed, N failed, N skipped`, that
 * tools reading only the last lines of a log (CI) understand.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>) {
    const count = { passed: 0, failed: 0, skipped: 0 };
    for (const mod of modules) {
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        // A test its file's setup (beforeAll) kept from running failed with it: it was not skipped.
        const keptFromRunning =
          state === "skipped" && mod.state() === "failed" && test.options.mode === "run";
        if (state === "passed") count.passed++;
        else if (state === "failed" || keptFromRunning) count.failed++;
        else count.skipped++;
      }
      if (mod.state() === "failed" && [...mod.children.allTests()].length === 0) count.failed++;
    }
    process.stdout.write(`\n${count.passed} passed, ${count.failed} failed, ${count.skipped} skipped\n`);
  }
}
