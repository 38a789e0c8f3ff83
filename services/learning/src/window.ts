const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The start of a learner's window (docs/api/learners.md §GET /platform/users): the last `days`
 * days up to now. An item whose lastDate is exactly at the start is inside,
 * like activeSince's >=.
 */
export const windowStart = (now: Date, days: number): Date => new Date(now.getTime() - days * DAY_MS);
