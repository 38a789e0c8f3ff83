import { isoString, z } from "@funil/schemas";
import type { KeyRecord, WorkspaceRecord } from "../store/keys.js";

/** A workspace as the admin API answers it, and as its events carry it. */
export const workspace = z.object({
  id: z.string(),
  name: z.string(),
  operator: z.boolean(),
  createdAt: z.string(),
});

export const workspaceJson = (w: WorkspaceRecord): z.output<typeof workspace> => ({
  id: w.id,
  name: w.name,
  operator: w.operator,
  createdAt: isoString(w.createdAt),
});

/** An API key as the admin API answers it: never its hash (its secret is shown once, on creation). */
export const apiKey = z.object({
  id: z.string(),
  workspaceId: z.string(),
  name: z.string(),
  scopes: z.array(z.string()),
  prefix: z.string(),
  createdAt: z.string(),
});

export const keyJson = (k: KeyRecord): z.output<typeof apiKey> => ({
  id: k.id,
  workspaceId: k.workspaceId,
  name: k.name,
  scopes: k.scopes,
  prefix: k.prefix,
  createdAt: isoString(k.createdAt),
});

/** An API key as its events carry it: as the admin API answers it, and when it was revoked. */
export const apiKeyChange = apiKey.extend({ revokedAt: z.string().nullable() });

export const keyChangeJson = (k: KeyRecord): z.output<typeof apiKeyChange> => ({
  ...keyJson(k),
  revokedAt: isoString(k.revokedAt) ?? null,
});
