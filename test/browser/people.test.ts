// What people get beyond the data: keyboard use (the skip link first, a quarantine dialog opened
// and dismissed without a mouse, focus back where it was) and, for a project with no runs, an empty
// state that says how to send results (the CLI and curl lines with this server's address).
import { afterAll, describe, expect, it } from 'vitest';
import { RETRY_FLAKE } from './helpers/seed.js';
import { checkPage, projectUrl, rest, restJson, signedIn, world, type SignedIn } from './helpers/world.js';

describe('for people', () => {
  const open: SignedIn[] = [];
  afterAll(async () => {
    for (const s of open) await s.close();
  });

  it('works from the keyboard: skip link first, a quarantine dialog opens on Enter and Escape leaves the test as it was', async () => {
    const s = await signedIn();
    open.push(s);
    const id = world().seed.testIds[RETRY_FLAKE.title]!;
    const before = await restJson(`/v1/tests/${id}`);
    await s.page.goto(projectUrl('flaky'));
    await s.page.locator('table.board tbody tr').first().waitFor();

    await s.page.keyboard.press('Tab');
    const focused = () => s.page.evaluate(() => {
      const el = (globalThis as unknown as { document: { activeElement: { textContent: string | null; id: string; tagName: string } | null } }).document.activeElement;
      return el ? { tag: el.tagName, id: el.id, text: (el.textContent ?? '').trim() } : null;
    });
    expect(await focused()).toMatchObject({ tag: 'A', text: 'Skip to content' });
    await s.page.keyboard.press('Enter');
    expect(await focused()).toMatchObject({ tag: 'MAIN', id: 'main' });

    const button = s.page.getByRole('button', { name: `${before.quarantined ? 'Release' : 'Quarantine'} ${RETRY_FLAKE.title}` });
    await button.focus();
    await s.page.keyboard.press('Enter');
    const dialog = s.page.getByRole('dialog');
    await dialog.waitFor();
    // The modal takes the focus (into its form), and Escape closes it without a decision.
    await expect.poll(() => dialog.evaluate((d) => d.contains((d.ownerDocument as unknown as { activeElement: unknown }).activeElement as never))).toBe(true);
    await s.page.keyboard.type('not now');
    await s.page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    await expect.poll(async () => (await focused())?.text).toBe(before.quarantined ? 'Release' : 'Quarantine');
    expect((await restJson(`/v1/tests/${id}`)).quarantined).toBe(before.quarantined);
    expect(s.problems).toEqual([]);
  });

  it('a project with no runs says how to send the first one, with this server’s address', async () => {
    const { adminToken, url } = world();
    const slug = `empty-${Date.now().toString(36)}`;
    const created = await rest('POST', '/v1/admin/projects', { token: adminToken, body: { slug } });
    expect(created.status).toBe(201);
    const s = await signedIn(adminToken);
    open.push(s);
    await s.page.goto(`/projects/${slug}/flaky`);
    const report = s.page.getByTestId('report-command');
    await expect.poll(() => report.textContent()).toContain(`SERVICE_ENDPOINT=${url}`);
    expect(await report.textContent()).toContain('npx flakehouse report');
    expect(await s.page.getByTestId('curl-command').textContent()).toContain(`${url}/v1/ingest/junit`);
    await checkPage(s, 'board-empty');
  });
});
