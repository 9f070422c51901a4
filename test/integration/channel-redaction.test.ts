// A webhook's credentials are not the readers' (issue 39, defect 7): GET /v1/notifications/channels
// and the dashboard's channels.list, with a read-only token, used to return a webhook's URL whole,
// userinfo and `?token=` included. They now show it redacted (src/domain/channel-target.ts); the
// admin, who writes the project's settings, still sees it whole there.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

let td: TestDaemon;

beforeAll(async () => {
  td = await startTestDaemon({ work: false });
});

afterAll(async () => td?.close());

describe('notification channel targets for readers', () => {
  it('redacts userinfo and secret query values for a read-only token; the admin sees the URL whole', async () => {
    const password = `pw-${randomBytes(12).toString('hex')}`;
    const queryToken = randomBytes(20).toString('hex');
    const target = `https://ops:${password}@hooks.acme.dev/flaky?token=${queryToken}&team=qa`;
    const patched = await td.request('PATCH', '/v1/admin/projects/default/settings', {
      token: td.adminToken,
      body: { notifications: { channels: [{ kind: 'webhook', target, events: ['flaky_detected'] }, { kind: 'email', target: 'qa@acme.dev' }] } },
    });
    expect(patched.status, patched.text).toBe(200);
    const created = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['read'] } });
    expect(created.status).toBe(201);
    const reader = created.json.token as string;

    const list = await td.request('GET', '/v1/notifications/channels', { token: reader });
    expect(list.status).toBe(200);
    expect(list.text).not.toContain(password);
    expect(list.text).not.toContain(queryToken);
    expect(list.json.items.map((c: { kind: string; target: string }) => [c.kind, c.target]).sort()).toEqual([
      ['email', 'qa@acme.dev'],
      ['webhook', 'https://[redacted]@hooks.acme.dev/flaky?token=[redacted]&team=qa'],
    ]);

    const viaProcedure = await td.request('GET', '/trpc/channels.list', { token: reader });
    expect(viaProcedure.status).toBe(200);
    expect(viaProcedure.text).not.toContain(password);
    expect(viaProcedure.text).not.toContain(queryToken);

    // The admin manages the channel: the settings and the admin's dashboard list show it whole.
    const settings = await td.request('GET', '/v1/admin/projects/default/settings', { token: td.adminToken });
    expect(settings.text).toContain(password);
    const adminList = await td.request('GET', '/trpc/channels.list', { token: td.adminToken, headers: { 'x-flakehouse-project': 'default' } });
    expect(adminList.status).toBe(200);
    expect(adminList.json.result.data.items.find((c: { kind: string }) => c.kind === 'webhook').target).toBe(target);
  });
});
