// POST /v1/tests/known against the real daemon (what `flakehouse run --verify-new` asks): each
// fingerprint resolves to its test, a test is seen on a branch when an execution of it ran there,
// and the largest request the schema allows (20,000 fingerprints) is answered whole.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executionFingerprint } from '../../client/src/contract/mute.js';
import { MAX_KNOWN_FINGERPRINTS } from '../../src/usecases/known-tests.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const onMain = { filePath: 'src/cart.test.ts', suite: 'cart', title: 'adds an item' };
const onFeature = { filePath: 'src/cart.test.ts', suite: 'cart', title: 'removes an item' };

function execution(t: typeof onMain): Record<string, unknown> {
  return { ...t, status: 'pass', attempt: 1, startedAt: Date.parse('2026-11-20T10:00:00Z'), durationMs: 5 };
}

/** A fingerprint no test has: the sha256 of a name nobody ingested. */
const unknown = (i: number): string => createHash('sha256').update(`never ingested ${i}`).digest('hex');

describe('POST /v1/tests/known', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon();
    await td.ingest(
      nativeBatch({ resource: { branch: 'main' }, executions: [execution(onMain)] }),
      nativeBatch({ resource: { branch: 'feature/x', trigger: 'pull_request' }, executions: [execution(onFeature)] }),
    );
  });
  afterAll(async () => td?.close());

  it('answers all 20,000 fingerprints of the largest request, each once, in the order asked', async () => {
    const main = executionFingerprint(onMain);
    const feature = executionFingerprint(onFeature);
    const fingerprints = [main, feature, ...Array.from({ length: MAX_KNOWN_FINGERPRINTS - 3 }, (_, i) => unknown(i)), main];
    expect(fingerprints).toHaveLength(MAX_KNOWN_FINGERPRINTS);
    const res = await td.request('POST', '/v1/tests/known', { body: { branch: 'main', fingerprints } });
    expect(res.status).toBe(200);
    expect(res.json.branch).toBe('main');
    expect(res.json.tests).toHaveLength(MAX_KNOWN_FINGERPRINTS - 1);
    const [first, second, third] = res.json.tests;
    expect(first).toMatchObject({ fingerprint: main, seenOnBranch: true });
    expect(first.testIdentityId).toMatch(/^[0-9a-f-]{36}$/);
    // Known to the project, but never run on main: `--verify-new` re-runs it.
    expect(second).toMatchObject({ fingerprint: feature, seenOnBranch: false });
    expect(second.testIdentityId).toMatch(/^[0-9a-f-]{36}$/);
    expect(third).toEqual({ fingerprint: unknown(0), testIdentityId: null, seenOnBranch: false });
  });

  it('refuses one fingerprint more, naming the field', async () => {
    const fingerprints = Array.from({ length: MAX_KNOWN_FINGERPRINTS + 1 }, (_, i) => unknown(i));
    const res = await td.request('POST', '/v1/tests/known', { body: { branch: 'main', fingerprints } });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_payload');
    expect(res.json.issues.map((i: { path: string }) => i.path)).toContain('fingerprints');
  });
});
