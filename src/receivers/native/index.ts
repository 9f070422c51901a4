// `native` receiver: POST /v1/ingest, the native JSON batch (docs/contract.md §2).
import { z } from 'zod';
import type { ReceiverFactory } from '../../pipeline/component.js';
import { ingestReceiptSchema, ingestRoute } from '../shared.js';
import { isSupportedContractVersion, nativeBatchSchema, unsupportedContractMessage } from './schema.js';
import { errors, zodIssues } from '../../errors/catalogue.js';

export const nativeReceiverFactory: ReceiverFactory<Record<string, never>> = {
  kind: 'receiver',
  type: 'native',
  needsStore: false,
  description: 'POST /v1/ingest: the native JSON batch',
  signals: ['executions'],
  configSchema: z.object({}).strict(),
  create: () =>
    ingestRoute({
      url: '/v1/ingest',
      summary: 'Ingest a run as a native JSON batch',
      source: 'native',
      body: nativeBatchSchema,
      response: ingestReceiptSchema,
      async decode(body) {
        const parsed = nativeBatchSchema.safeParse(body);
        if (!parsed.success) throw errors.invalidPayload(zodIssues(parsed.error));
        if (!isSupportedContractVersion(parsed.data.contractVersion)) {
          throw errors.unsupportedContractVersion(unsupportedContractMessage(parsed.data.contractVersion));
        }
        return [parsed.data];
      },
    }),
};
