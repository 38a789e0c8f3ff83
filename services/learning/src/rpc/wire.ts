import type { Learner, LearnerDetail } from "@funil/contracts";
import type { LearnerDetailRecord, LearnerRecord } from "../store/learners.js";

/**
 * Records as the contracts' messages, written as literals with their $typeName rather than through
 * create(), which walks the descriptor for every field of every learner of a page; a literal is the same
 * message to every encoder (an unset optional field is undefined). The timestamps are already the API's
 * text (store/learners.ts IsoText), the detail's lists already without their absent fields.
 */
const absent = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

export const learnerToProto = (r: LearnerRecord): Learner => ({
  $typeName: "funil.learning.v1.Learner",
  id: r.id,
  name: r.name,
  email: r.email,
  createdAt: r.createdAt,
  lastLoginAt: absent(r.lastLoginAt),
  lastActiveAt: absent(r.lastActiveAt),
  enrolledCourses: r.enrolledCourses,
  completedCourses: r.completedCourses,
  certificates: r.certificates,
});

export const learnerDetailToProto = (r: LearnerDetailRecord): LearnerDetail => ({
  $typeName: "funil.learning.v1.LearnerDetail",
  id: r.id,
  name: r.name,
  email: r.email,
  createdAt: r.createdAt,
  windowDays: r.windowDays,
  access: {
    $typeName: "funil.learning.v1.LearnerAccess",
    lastLoginAt: absent(r.access.lastLoginAt),
    lastActiveAt: absent(r.access.lastActiveAt),
    sessionsInWindow: r.access.sessionsInWindow,
    lastIp: absent(r.access.lastIp),
  },
  courses: r.courses.map((c) => ({ $typeName: "funil.learning.v1.LearnerCourse", ...c })),
  lessons: r.lessons.map((l) => ({ $typeName: "funil.learning.v1.LearnerLesson", ...l })),
  certificates: r.certificates.map((c) => ({ $typeName: "funil.learning.v1.LearnerCertificate", ...c })),
  library: r.library.map((d) => ({ $typeName: "funil.learning.v1.LibraryRead", ...d })),
});
