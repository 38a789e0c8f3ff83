// The keyset cursors live with the keyset pages in @funil/db, where the shared list skeleton (lists.ts)
// uses them; they stay exported here for the gateway, the services' start and the benchmarks.
export { decodeCursor, encodeCursor, keysetPage, type Position, useCursorKeys } from "@funil/db";
