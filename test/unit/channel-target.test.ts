// What a reader is shown of a notification channel's target (src/domain/channel-target.ts).
import { describe, expect, it } from 'vitest';
import { looksSecret, readerChannelTarget, redactWebhookTarget } from '../../src/domain/channel-target.js';

describe('redactWebhookTarget', () => {
  it('redacts the userinfo and secret query values, keeps scheme, host and plain words', () => {
    expect(redactWebhookTarget('https://u:hunter2-secret@hooks.acme.dev/flaky?token=abc&team=qa')).toBe('https://[redacted]@hooks.acme.dev/flaky?token=[redacted]&team=qa');
    expect(redactWebhookTarget('https://only-a-token@hooks.acme.dev/x')).toBe('https://[redacted]@hooks.acme.dev/x');
    expect(redactWebhookTarget('https://hooks.acme.dev:8443/in?sig=1&access_token=zz&page=2')).toBe('https://hooks.acme.dev:8443/in?sig=[redacted]&access_token=[redacted]&page=2');
  });

  it('redacts secret-looking path segments and values whatever their name', () => {
    expect(redactWebhookTarget('https://hooks.slack.com/services/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')).toBe('https://hooks.slack.com/services/T0123ABCD/B0456EFGH/[redacted]');
    const discord = `https://discord.com/api/webhooks/123456789012345678/${'aZ09_-'.repeat(11)}`;
    // The numeric id names the webhook; the token after it is the secret.
    expect(redactWebhookTarget(discord)).toBe('https://discord.com/api/webhooks/123456789012345678/[redacted]');
    expect(redactWebhookTarget('https://x.dev/in?k2=3f9a8b7c6d5e4f3a2b1c')).toBe('https://x.dev/in?k2=[redacted]');
    expect(redactWebhookTarget('https://x.dev/in#frag')).toBe('https://x.dev/in#[redacted]');
  });

  it('leaves a URL without credentials as it was', () => {
    for (const t of ['https://hooks.slack.com/services/T0/B0/abc', 'https://discord.com/api/webhooks/1/x', 'https://hooks.acme.dev/flaky', 'https://hooks.example.com/from-config?team=qa']) {
      expect(redactWebhookTarget(t)).toBe(t);
    }
    expect(redactWebhookTarget('not a url')).toBe('[redacted]');
  });

  it('keeps email addresses whole', () => {
    expect(readerChannelTarget('email', 'qa@acme.dev')).toBe('qa@acme.dev');
    expect(readerChannelTarget('webhook', 'https://a:b@x.dev/')).toBe('https://[redacted]@x.dev/');
  });

  it('tells generated values from words', () => {
    expect(looksSecret('services')).toBe(false);
    expect(looksSecret('notifications-flaky')).toBe(false);
    expect(looksSecret('B0456EFGH')).toBe(false);
    expect(looksSecret('Xq9vLr2mTz8KpW3nYb7cJd4e')).toBe(true);
    expect(looksSecret('a'.repeat(32))).toBe(true);
  });
});
