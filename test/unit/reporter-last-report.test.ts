// The record `summary`/`gate` read outside CI: per repository, per server, never the placeholder.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LAST_REPORT_FILE, commitFromLastReport, lastReportFromResource, readLastReport, repositoryRootOf, writeLastReport } from '../../client/src/reporter/last-report.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fh-last-report-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const target = { endpoint: 'http://127.0.0.1:8080', project: undefined };
const resource = { ciProvider: 'local', commitSha: 'abcdef1234', branch: 'feature/x', trigger: 'other', baseBranch: 'main' } as const;

describe('last report', () => {
  it('is recorded per repository root and read back from any directory inside it', () => {
    const repo = path.join(tmp, 'repo');
    fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
    fs.mkdirSync(path.join(repo, 'pkg/a'), { recursive: true });
    const buffer = path.join(tmp, 'buffer');
    writeLastReport(buffer, path.join(repo, 'pkg/a'), lastReportFromResource(resource, target, Date.parse('2026-11-24T10:00:00Z')));
    expect(repositoryRootOf(path.join(repo, 'pkg/a'))).toBe(repo);
    expect(readLastReport(buffer, repo)).toEqual({ commitSha: 'abcdef1234', branch: 'feature/x', baseBranch: 'main', endpoint: target.endpoint, project: null, reportedAt: '2026-11-24T10:00:00.000Z' });
    const elsewhere = path.join(tmp, 'elsewhere');
    fs.mkdirSync(elsewhere);
    expect(readLastReport(buffer, elsewhere)).toBeUndefined();
    // A later report in the same repository replaces it.
    writeLastReport(buffer, repo, lastReportFromResource({ ...resource, commitSha: '1234567' }, target, Date.parse('2026-11-24T11:00:00Z')));
    expect(readLastReport(buffer, path.join(repo, 'pkg'))?.commitSha).toBe('1234567');
    expect(fs.statSync(path.join(buffer, LAST_REPORT_FILE)).mode & 0o777).toBe(0o600);
  });

  it('a damaged file reads as no report', () => {
    const buffer = path.join(tmp, 'damaged');
    fs.mkdirSync(buffer);
    fs.writeFileSync(path.join(buffer, LAST_REPORT_FILE), '{"version":1,"repositories":');
    expect(readLastReport(buffer, tmp)).toBeUndefined();
  });

  it('is used only for the same server and project, and never for the placeholder commit', () => {
    const report = lastReportFromResource(resource, target, 0);
    expect(commitFromLastReport(report, target)).toEqual({ ok: true, report });
    expect(commitFromLastReport(undefined, target)).toMatchObject({ ok: false, reason: expect.stringContaining('no `flakehouse report` has run') });
    expect(commitFromLastReport(report, { ...target, endpoint: 'https://other:8080' })).toMatchObject({ ok: false, reason: expect.stringContaining('not to this server') });
    expect(commitFromLastReport(report, { ...target, project: 'shop' })).toMatchObject({ ok: false });
    const placeholder = lastReportFromResource({ ...resource, commitSha: '0000000' }, target, 0);
    expect(commitFromLastReport(placeholder, target)).toMatchObject({ ok: false, reason: expect.stringContaining('placeholder 0000000') });
  });
});
