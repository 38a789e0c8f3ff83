import { create } from "@bufbuild/protobuf";
import { LearnerDetailSchema, LearnerSchema } from "@funil/contracts";
import type { LearnerDetailRecord, LearnerRecord } from "../store/learners.js";

/** Records as the contracts' messages: a record's null is an unset optional field (null in the API). */
const absent = <T>(v: T | null): T | undefined => (v === null ? undefined : v);
const iso = (d: Date | null) => d?.toISOString();

export const learnerToProto = (r: LearnerRecord) =>
  create(LearnerSchema, {
    id: r.id,
    name: r.name,
    email: r.email,
    createdAt: r.createdAt.toISOString(),
    lastLoginAt: iso(r.lastLoginAt),
    lastActiveAt: iso(r.lastActiveAt),
    enrolledCourses: r.enrolledCourses,
    completedCourses: r.completedCourses,
    certificates: r.certificates,
  });

export const learnerDetailToProto = (r: LearnerDetailRecord) =>
  create(LearnerDetailSchema, {
    id: r.id,
    name: r.name,
    email: r.email,
    createdAt: r.createdAt.toISOString(),
    windowDays: r.windowDays,
    access: {
      lastLoginAt: iso(r.access.lastLoginAt),
      lastActiveAt: iso(r.access.lastActiveAt),
      sessionsInWindow: r.access.sessionsInWindow,
      lastIp: absent(r.access.lastIp),
    },
    courses: r.courses.map((c) => ({
      ...c,
      courseTitle: absent(c.courseTitle),
      startedAt: iso(c.startedAt),
      completedAt: iso(c.completedAt),
    })),
    lessons: r.lessons.map((l) => ({
      ...l,
      title: absent(l.title),
      courseTitle: absent(l.courseTitle),
      lastDate: l.lastDate.toISOString(),
    })),
    certificates: r.certificates.map((c) => ({
      ...c,
      courseTitle: absent(c.courseTitle),
      issuedAt: c.issuedAt.toISOString(),
    })),
    library: r.library.map((d) => ({ ...d, title: absent(d.title), lastDate: d.lastDate.toISOString() })),
  });
