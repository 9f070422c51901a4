// Pure notification logic: event → notification mapping, docs/contract.md §9 dedupe keys, filters,
// messages per channel kind, the webhook signature, the SSRF address check and retry backoff.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadIntegrationSettings, redactIntegrationSettings } from '../../src/config/integrations.js';
import type { ConfigError } from '../../client/src/contract/config/errors.js';
import type { DomainEvent } from '../../src/domain/events.js';
import { checkOutboundUrl, isPrivateAddress } from '../../src/domain/net-address.js';
import {
  channelAccepts,
  describe as describeMessage,
  discordPayload,
  emailMessage,
  retryDelayMs,
  signWebhook,
  slackPayload,
  toNotification,
  verifyWebhookSignature,
  webhookPayload,
} from '../../src/domain/notifications.js';

const P = '11111111-1111-4111-8111-111111111111';
const T = '22222222-2222-4222-8222-222222222222';
const at = Date.parse('2026-11-21T10:00:00Z');
const ev = (type: string, data: Record<string, unknown>): DomainEvent => ({ id: `e-${type}`, type: type as DomainEvent['type'], projectId: P, occurredAt: at, data });

const flaky = ev('flaky.detected', {
  testIdentityId: T,
  filePath: 'src/cart.test.ts',
  suite: 'cart',
  title: 'applies a <coupon> & more',
  score: 0.9312,
  reasons: [{ code: 'SAME_SHA_VARIANCE', message: '…' }, { code: 'PASS_ON_RERUN', message: '…' }],
});

describe('toNotification: domain event → notification type and docs/contract.md §9 dedupe key', () => {
  it('maps the five producing event types and ignores the rest', () => {
    const suite = { suite: 'cart', day: '2026-11-21', today: { executions: 30, failRate: 0.3, avgMs: 900 }, baseline: { failRate: 0.05, avgMs: 300, days: 3 } };
    const cases: [DomainEvent, string, string][] = [
      [flaky, 'flaky_detected', `flaky_detected:${T}`],
      [ev('quarantine.changed', { testIdentityId: T, quarantined: true, source: 'auto', reason: 'flaky', score: 0.9 }), 'quarantine_changed', `quarantine_changed:${T}:quarantined`],
      [ev('quarantine.changed', { testIdentityId: T, quarantined: false, source: 'manual', reason: null }), 'quarantine_changed', `quarantine_changed:${T}:released`],
      [ev('rca.created', { signatureId: 'sig-1', testIdentityId: T, summary: 'race in cart', model: 'm' }), 'rca_ready', 'rca_ready:sig-1'],
      [ev('suite.regressed', suite), 'suite_regressed', 'suite_regressed:cart:2026-11-21'],
      [ev('suite.slowed', suite), 'suite_slowed', 'suite_slowed:cart:2026-11-21'],
      [ev('ai.budget_spent', { dailyTokenBudget: 1000, tokensSpent: 1012 }), 'ai_budget_spent', `ai_budget_spent:${P}:2026-11-21`],
    ];
    for (const [event, type, key] of cases) expect(toNotification(event)).toMatchObject({ type, dedupeKey: key, projectId: P, eventId: event.id });
    for (const type of ['run.processed', 'identity.created', 'identity.moved', 'score.updated']) expect(toNotification(ev(type, { testIdentityId: T }))).toBeNull();
    // Malformed payloads are skipped, not delivered half-empty.
    expect(toNotification(ev('flaky.detected', { score: 'high' }))).toBeNull();
  });

  it('filters: an empty or absent list accepts everything', () => {
    expect(channelAccepts(null, 'rca_ready')).toBe(true);
    expect(channelAccepts([], 'rca_ready')).toBe(true);
    expect(channelAccepts(['flaky_detected'], 'rca_ready')).toBe(false);
    expect(channelAccepts(['flaky_detected', 'rca_ready'], 'rca_ready')).toBe(true);
  });
});

describe('messages', () => {
  const n = toNotification(flaky)!;
  const ctx = { projectSlug: 'shop', dashboardUrl: 'https://flakes.example.com' };

  it('links into the dashboard only when SERVICE_DASHBOARD_URL is set', () => {
    expect(describeMessage(n, ctx).url).toBe(`https://flakes.example.com/projects/shop/tests/${T}`);
    expect(describeMessage(n, { projectSlug: 'shop' }).url).toBeNull();
  });

  it('Slack: Block Kit with header, escaped mrkdwn, fields and a link button', () => {
    const body = slackPayload(describeMessage(n, ctx)) as { text: string; blocks: any[] };
    expect(body.text).toContain('Flaky test detected');
    expect(body.blocks[0]).toEqual({ type: 'header', text: { type: 'plain_text', text: 'Flaky test detected' } });
    expect(body.blocks[1].text.text).toBe('`cart › applies a &lt;coupon&gt; &amp; more` is now flaky (score 0.93)');
    expect(body.blocks[1].fields.map((f: { text: string }) => f.text)).toContain('*Reasons*\nSAME_SHA_VARIANCE, PASS_ON_RERUN');
    expect(body.blocks[2].elements[0]).toMatchObject({ type: 'button', url: `https://flakes.example.com/projects/shop/tests/${T}` });
  });

  it('Discord: one embed with the link as its url, no mentions', () => {
    const body = discordPayload(describeMessage(n, ctx), at) as { embeds: any[]; allowed_mentions: unknown };
    expect(body.embeds[0]).toMatchObject({ title: 'Flaky test detected', url: `https://flakes.example.com/projects/shop/tests/${T}`, timestamp: '2026-11-21T10:00:00.000Z' });
    expect(body.embeds[0].fields).toContainEqual({ name: 'Score', value: '0.93', inline: true });
    expect(body.allowed_mentions).toEqual({ parse: [] });
  });

  it('email: subject names project, kind and test; text and html carry the link', () => {
    const mail = emailMessage(describeMessage(n, ctx), ctx);
    expect(mail.subject).toBe('[Flakehouse] shop: Flaky test detected: cart › applies a <coupon> & more is now flaky (score 0.93)');
    expect(mail.text).toContain('File: src/cart.test.ts');
    expect(mail.text).toContain(`https://flakes.example.com/projects/shop/tests/${T}`);
    expect(mail.html).toContain('<code>cart › applies a &lt;coupon&gt; &amp; more</code>');
  });

  it('webhook: the notification as JSON with project, key and link', () => {
    expect(webhookPayload(n, ctx)).toEqual({
      id: 'e-flaky.detected',
      type: 'flaky_detected',
      projectId: P,
      project: 'shop',
      occurredAt: '2026-11-21T10:00:00.000Z',
      dedupeKey: `flaky_detected:${T}`,
      url: `https://flakes.example.com/projects/shop/tests/${T}`,
      data: { test: { testId: T, filePath: 'src/cart.test.ts', suite: 'cart', title: 'applies a <coupon> & more' }, score: 0.9312, reasons: ['SAME_SHA_VARIANCE', 'PASS_ON_RERUN'] },
    });
  });
});

describe('webhook signature (docs/contract.md §9)', () => {
  it('is t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">', () => {
    const body = '{"a":1}';
    const expected = createHmac('sha256', 's3cret').update(`1795255200.${body}`).digest('hex');
    expect(signWebhook('s3cret', body, 1795255200)).toBe(`t=1795255200,v1=${expected}`);
  });

  it('verifies only the same secret, body and a fresh timestamp', () => {
    const header = signWebhook('s3cret', 'body', 1000);
    expect(verifyWebhookSignature('s3cret', header, 'body', 1010)).toBe(true);
    expect(verifyWebhookSignature('other', header, 'body', 1010)).toBe(false);
    expect(verifyWebhookSignature('s3cret', header, 'body!', 1010)).toBe(false);
    expect(verifyWebhookSignature('s3cret', header, 'body', 2000)).toBe(false);
  });
});

describe('SSRF guard', () => {
  it('private, loopback, link-local, CGNAT, multicast and mapped addresses are private', () => {
    for (const ip of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '::1', '::', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::a00:1', 'not-an-ip']) {
      expect(isPrivateAddress(ip), ip).toBe(true);
    }
    for (const ip of ['8.8.8.8', '172.32.0.1', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(isPrivateAddress(ip), ip).toBe(false);
  });

  it('https only, unless private targets are allowed', () => {
    expect(checkOutboundUrl('https://hooks.slack.com/services/x', false).ok).toBe(true);
    expect(checkOutboundUrl('http://hooks.example.com/x', false)).toMatchObject({ ok: false });
    expect(checkOutboundUrl('http://127.0.0.1:9/x', true).ok).toBe(true);
    expect(checkOutboundUrl('file:///etc/passwd', true)).toMatchObject({ ok: false });
  });
});

describe('retry backoff', () => {
  it('grows ×4 from the initial delay and is capped', () => {
    expect([1, 2, 3, 4, 5].map((a) => retryDelayMs(a, 1000, 60_000))).toEqual([1000, 4000, 16_000, 60_000, 60_000]);
  });
});

describe('notification and tracker settings (environment)', () => {
  const load = (env: Record<string, string>) => {
    const errors: ConfigError[] = [];
    return { ...loadIntegrationSettings(env, errors), errors: errors.map((e) => e.message) };
  };

  it('defaults: no channels, every event, port 587 without implicit TLS, GitHub API', () => {
    const s = load({});
    expect(s.notifications).toEqual({ events: null, allowPrivateWebhooks: false });
    expect(s.tracker).toEqual({ url: 'https://api.github.com' });
    const smtp = load({ SERVICE_SMTP_HOST: 'mail.example.com', SERVICE_SMTP_FROM: 'ci@example.com' }).notifications.smtp;
    expect(smtp).toMatchObject({ host: 'mail.example.com', port: 587, secure: false, from: 'ci@example.com' });
  });

  it('465 implies TLS; SERVICE_SMTP_SECURE decides either way', () => {
    const base = { SERVICE_SMTP_HOST: 'h', SERVICE_SMTP_FROM: 'a@b' };
    expect(load({ ...base, SERVICE_SMTP_PORT: '465' }).notifications.smtp?.secure).toBe(true);
    expect(load({ ...base, SERVICE_SMTP_PORT: '465', SERVICE_SMTP_SECURE: 'false' }).notifications.smtp?.secure).toBe(false);
    expect(load({ ...base, SERVICE_SMTP_SECURE: 'true' }).notifications.smtp?.secure).toBe(true);
  });

  it('names every bad variable', () => {
    const s = load({ SERVICE_EMAIL_TO: 'team@example.com', SERVICE_NOTIFY_EVENTS: 'flaky_detected, nope', SERVICE_SLACK_WEBHOOK: 'hooks', SERVICE_TRACKER_REPOSITORY: 'just-a-name' });
    expect(s.errors).toEqual([
      'env: SERVICE_EMAIL_TO: email needs SERVICE_SMTP_HOST and SERVICE_SMTP_FROM',
      'env: SERVICE_SLACK_WEBHOOK: expected an http(s) URL, got "hooks"',
      expect.stringMatching(/^env: SERVICE_NOTIFY_EVENTS: expected event types from flaky_detected, .*got "nope"$/),
      'env: SERVICE_TRACKER_REPOSITORY: expected owner/name, got "just-a-name"',
    ]);
    expect(load({ SERVICE_NOTIFY_EVENTS: 'rca_ready,flaky_detected' }).notifications.events).toEqual(['rca_ready', 'flaky_detected']);
  });

  it('redacts webhook paths, the SMTP password and the tracker token for `flakehouse config`', () => {
    const s = load({ SERVICE_SLACK_WEBHOOK: 'https://hooks.slack.com/services/T/B/secret', SERVICE_SMTP_HOST: 'h', SERVICE_SMTP_FROM: 'a@b', SERVICE_SMTP_PASS: 'pw', SERVICE_TRACKER_TOKEN: 'ghp_x' });
    const r = redactIntegrationSettings(s);
    expect(JSON.stringify(r)).not.toMatch(/secret|"pw"|ghp_x/);
    expect(r.notifications.slackWebhook).toBe('https://hooks.slack.com/[redacted]');
  });
});
