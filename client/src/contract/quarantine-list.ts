// The answer of GET /v1/quarantine (docs/api.md "Quarantine list"): the project's quarantined tests
// with the keys a runner matches on. The route declares it and `flakehouse run` and the reporters
// parse it with it, so both sides agree by construction.
import { z } from 'zod';

export const quarantineEntrySchema = z
  .object({
    testIdentityId: z.string(),
    /** The identity's fingerprint, then its aliases' (sha256 of the test key, docs/contract.md §1). */
    fingerprints: z.array(z.string()),
    filePath: z.string(),
    suite: z.string(),
    title: z.string(),
    params: z.record(z.string(), z.unknown()).nullable(),
    reason: z.string(),
    source: z.enum(['manual', 'auto']),
    since: z.string().nullable(),
  })
  .meta({ id: 'QuarantinedTest' });

export const quarantineListSchema = z.object({ items: z.array(quarantineEntrySchema) }).meta({ id: 'QuarantineList' });

/**
 * An entry as a runner reads it: what it matches on is required; `source` and `since` only inform,
 * so a list from a server that leaves them out (or adds a source) still mutes.
 */
export const quarantineEntryReadSchema = quarantineEntrySchema.extend({
  source: z.string().optional(),
  since: z.string().nullable().optional(),
});

export const quarantineListReadSchema = z.object({ items: z.array(quarantineEntryReadSchema) });
