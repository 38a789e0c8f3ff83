import { describe, expect, it } from "vitest";
import { statementName } from "./tracing.js";

describe("a statement's span name", () => {
  it("is its first words with whitespace folded, the text before the first parameter, so never a value", () => {
    expect(statementName("\n    insert into outbox (id, subject, envelope)\n    select ")).toBe(
      "insert into outbox (id,",
    );
    expect(statementName("select 1 from pg_database where datname = ")).toBe("select 1 from pg_database");
  });

  it("is at most 60 characters, and never empty", () => {
    expect(statementName(`select ${"x".repeat(100)}`)).toHaveLength(60);
    expect(statementName("   ")).toBe("statement");
  });
});
