import { describe, expect, it } from "vitest";
import { copyLine, lineError, parseLine, rowsOf } from "./bulk.js";

describe("import lines (docs/api/learners.md §Ingest)", () => {
  it("docs/api/learners.md §Ingest: a line is {subject, data}; not JSON, not an object or no subject is refused", () => {
    expect(parseLine("{oops")).toMatchObject({
      ok: false,
      problems: [{ path: "line", message: "is not valid JSON" }],
    });
    expect(parseLine("[1]")).toMatchObject({ ok: false, problems: [{ path: "line" }] });
    expect(parseLine('{"data":{}}')).toMatchObject({ ok: false, problems: [{ path: "subject" }] });
  });

  it("docs/api/learners.md §Ingest: the error of a bad line names its number and field", () => {
    const r = parseLine('{"subject":"platform.session.seen","data":{"userId":"u1","at":"never"}}');
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(lineError(12, r.problems)).toBe("line 12: data.at: must be an ISO-8601 timestamp with offset");
  });

  it("a course fills the courses and lessons staging tables; a user carries its folded search text", () => {
    const course = parseLine(
      JSON.stringify({
        subject: "platform.course.upserted",
        data: {
          courseId: "c1",
          title: "Curso",
          lessons: [
            { lessonId: "l1", title: "A" },
            { lessonId: "l2", title: "B" },
          ],
        },
      }),
    );
    if (!course.ok) throw new Error("course refused");
    expect(rowsOf(course.message)).toEqual([
      ["courses", ["c1", "Curso"]],
      ["lessons", ["l1", "c1", "A"]],
      ["lessons", ["l2", "c1", "B"]],
    ]);
    const user = parseLine(
      JSON.stringify({
        subject: "platform.user.upserted",
        data: { userId: "u1", name: "Zoë", email: "ZOE@x.io", createdAt: "2026-01-01T00:00:00Z" },
      }),
    );
    if (!user.ok) throw new Error("user refused");
    expect(rowsOf(user.message)[0]?.[1][4]).toBe("zoe zoe@x.io");
  });

  it("COPY text: tabs, newlines and backslashes are escaped, null is \\N", () => {
    expect(copyLine([1, "a\tb\nc\\d\re", null, true, new Date("2026-01-01T00:00:00Z")])).toBe(
      "1\ta\\tb\\nc\\\\d\\re\t\\N\tt\t2026-01-01T00:00:00.000Z\n",
    );
  });
});
