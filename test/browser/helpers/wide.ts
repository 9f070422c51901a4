// A second project ("wide-board") with names as real projects have them: long test titles, file
// paths without a space to wrap at, JUnit-style suite class names and long owner handles; three
// retry flakes and a broken test run 20 days ago, and only some of the healthy tests run again
// yesterday. The layout checks (board and suites at 1280 and 390 px) and the time-range filter
// use it; the default project's seed stays as the other files expect it.
import { expect } from 'vitest';
import { rest, world } from './world.js';

export const WIDE_SLUG = 'wide-board';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const RUNS = 8;

const CHECKOUT_SUITE = 'com.example.shop.checkout.payment.processors.stripe.StripeProcessorIntegrationTest$RetryAndIdempotencyHandlingWithWebhookReplay';
const CATALOGUE_SUITE = 'com.example.shop.catalogue.listing.ProductListingPaginationAndSortingIntegrationTest$WithPersonalisedRecommendationsEnabled';
const path = (name: string) => `src/features/checkout/payment-processors/stripe-integration/retry-and-idempotency-handling/${name}.integration.test.ts`;

interface T {
  filePath: string;
  suite: string;
  title: string;
}
export const WIDE_FLAKY: T[] = [1, 2, 3].map((i) => ({
  filePath: path(`charge-timeouts-${i}`),
  suite: CHECKOUT_SUITE,
  title: `retries the card charge when the processor times out and keeps the same idempotency key across attempts (variant ${i})`,
}));
export const WIDE_BROKEN: T = {
  filePath: path('loyalty-discount-ordering'),
  suite: CHECKOUT_SUITE,
  title: 'applies the loyalty discount after the coupon and before the gift card balance when all three apply',
};
/** Healthy tests that ran again yesterday, and two that last ran 20 days ago. */
export const WIDE_RECENT: T[] = [1, 2, 3, 4].map((i) => ({ filePath: path(`catalogue-listing-${i}`), suite: CATALOGUE_SUITE, title: `lists the products of a category with personalised recommendations, page ${i}` }));
export const WIDE_LEGACY: T[] = [1, 2].map((i) => ({ filePath: path(`legacy-export-${i}`), suite: CATALOGUE_SUITE, title: `exports the legacy product feed in the old CSV dialect, part ${i}` }));

const CODEOWNERS = '* @example-shop/checkout-payments-platform-reliability-team @example-shop-engineering/quality-assurance-and-release-management';

function sha(n: number): string {
  return `${String(n).padStart(8, '0')}${'c0ffee'.repeat(6)}`.slice(0, 40);
}

function batch(key: string, at: number, commit: string, executions: Record<string, unknown>[]): Record<string, unknown> {
  const failed = executions.some((e, i) => e.status === 'fail' && !executions.some((x) => x.retryOfIndex === i));
  return {
    contractVersion: '0.1.0',
    idempotencyKey: key,
    resource: { ciProvider: 'github_actions', commitSha: commit, branch: 'main', trigger: 'push', repository: 'example/shop' },
    run: { status: failed ? 'failed' : 'passed', startedAt: at, finishedAt: at + 60_000 },
    executions,
  };
}

function batches(): Record<string, unknown>[] {
  const old = Date.now() - 20 * DAY;
  const out: Record<string, unknown>[] = [];
  for (let r = 1; r <= RUNS; r++) {
    const at = old + r * HOUR;
    const ex: Record<string, unknown>[] = [];
    const push = (t: T, status: 'pass' | 'fail', extra: Record<string, unknown> = {}) => {
      ex.push({ ...t, status, startedAt: at + ex.length, durationMs: 30 + ex.length, ...(status === 'fail' ? { error: { message: `${t.title}: expected 200, got 504` } } : {}), ...extra });
      return ex.length - 1;
    };
    for (const t of [...WIDE_RECENT, ...WIDE_LEGACY]) push(t, 'pass');
    for (const t of WIDE_FLAKY) {
      if (r % 2 === 1) {
        const first = push(t, 'fail');
        push(t, 'pass', { attempt: 2, retryOfIndex: first });
      } else push(t, 'pass');
    }
    push(WIDE_BROKEN, r >= 5 ? 'fail' : 'pass');
    out.push(batch(`wide-main-${r}`, at, sha(r), ex));
  }
  const at = Date.now() - DAY;
  out.push(batch('wide-recent', at, sha(RUNS + 1), WIDE_RECENT.map((t, i) => ({ ...t, status: 'pass', startedAt: at + i, durationMs: 25 }))));
  return out;
}

let ready: Promise<{ slug: string; token: string }> | undefined;

/** The project, seeded once per worker, and a token with every scope of it. */
export function wideProject(): Promise<{ slug: string; token: string }> {
  ready ??= seedWide();
  return ready;
}

async function seedWide(): Promise<{ slug: string; token: string }> {
  const { adminToken } = world();
  const created = await rest('POST', '/v1/admin/projects', { token: adminToken, body: { slug: WIDE_SLUG } });
  expect([201, 409], created.text).toContain(created.status);
  const tok = await rest('POST', `/v1/admin/projects/${WIDE_SLUG}/tokens`, { token: adminToken, body: { scopes: ['ingest', 'read', 'quarantine'] } });
  expect(tok.status, tok.text).toBe(201);
  const token = String(tok.json.token);
  expect((await rest('PUT', '/v1/codeowners', { token, body: { content: CODEOWNERS } })).status).toBe(200);
  const all = batches();
  for (const b of all) {
    const res = await rest('POST', '/v1/ingest', { token, body: b });
    expect([200, 202], res.text).toContain(res.status);
  }
  // Processed and scored: every run listed, the flakes flaky and the broken test broken.
  await expect
    .poll(
      async () => {
        const runs = await rest('GET', '/v1/runs?limit=100', { token });
        const board = await rest('GET', '/v1/flaky?limit=100', { token });
        const state = (t: T) => (board.json?.items as { title: string; state: string }[] | undefined)?.find((i) => i.title === t.title)?.state;
        return { runs: runs.json?.items?.length, flaky: WIDE_FLAKY.map(state), broken: state(WIDE_BROKEN) };
      },
      { timeout: 60_000, interval: 250 },
    )
    .toEqual({ runs: all.length, flaky: WIDE_FLAKY.map(() => 'flaky'), broken: 'broken' });
  return { slug: WIDE_SLUG, token };
}

export function wideUrl(...parts: string[]): string {
  return `/projects/${WIDE_SLUG}/${parts.map(encodeURIComponent).join('/')}`;
}
