import { create } from "@bufbuild/protobuf";
import { LearnerDetailSchema, LearnerSchema } from "@funil/contracts";
import { isoString } from "@funil/schemas";
import type { LearnerDetailRecord, LearnerRecord } from "../store/learners.js";

/** Records as the contracts' messages: a record's null is an unset optional field (null in the API). */
const absent = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

export const learnerToProto = (r: LearnerRecord) =>
  create(LearnerSchema, {
    id: r.id,
    name: r.name,
    email: r.email,
    createdAt: isoString(r.createdAt),
    lastLoginAt: isoString(r.lastLoginAt),
    lastActiveAt: isoString(r.lastActiveAt),
    enrolledCourses: r.enrolledCourses,
    completedCourses: r.completedCourses,
    certificates: r.certificates,
  });

export const learnerDetailToProto = (r: LearnerDetailRecord) =>
  create(LearnerDetailSchema, {
    id: r.id,
    name: r.name,
    email: r.email,
    createdAt: isoString(r.createdAt),
    windowDays: r.windowDays,
    access: {
      lastLoginAt: isoString(r.access.lastLoginAt),
      lastActiveAt: isoString(r.access.lastActiveAt),
      sessionsInWindow: r.access.sessionsInWindow,
      lastIp: absent(r.access.lastIp),
    },
    courses: r.courses.map((c) => ({
      ...c,
      courseTitle: absent(c.courseTitle),
      startedAt: isoString(c.startedAt),
      completedAt: isoString(c.completedAt),
    })),
    lessons: r.lessons.map((l) => ({
      ...l,
      title: absent(l.title),
      courseTitle: absent(l.courseTitle),
      lastDate: isoString(l.lastDate),
    })),
    certificates: r.certificates.map((c) => ({
      ...c,
      courseTitle: absent(c.courseTitle),
      issuedAt: isoString(c.issuedAt),
    })),
    library: r.library.map((d) => ({ ...d, title: absent(d.title), lastDate: isoString(d.lastDate) })),
  });
