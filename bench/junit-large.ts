// `npm run bench -- junit-large [--cases 100000] [--reports 3] [--label NAME]`
//
// Peak RSS of the daemon (child process, embedded chDB + lmdb queue) while it ingests `reports`
// JUnit reports of `cases` test cases each, posted at once (gzip), until every case is stored
// (or the reports are refused). Not a timed test: it writes bench/results/junit-large-<label>-latest.json.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { writeResult } from './results.js';
import { bootstrapToken, startServerProcess } from '../test/helpers/process.js';

/** A JUnit report of `cases` test cases (Surefire-style class names), one failure in 250. */
export function junitXml(cases: number, seed: string): string {
  const parts: string[] = ['<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>'];
  const perSuite = 500;
  for (let s = 0; s * perSuite < cases; s++) {
    parts.push(`<testsuite name="suite${s}" timestamp="2026-11-20T10:00:00" tests="${perSuite}">`);
    for (let i = s * perSuite; i < Math.min(cases, (s + 1) * perSuite); i++) {
      const name = `test_${seed}_${i}`;
      const cls = `com.example.module${i % 97}.Feature${i % 13}Test`;
      if (i % 250 === 0) {
        parts.push(`<testcase classname="${cls}" name="${name}" time="0.120"><failure message="expected 1 but was 2" type="AssertionError">at ${cls}.${name}(Feature.java:${i % 400})</failure></testcase>`);
      } else {
        parts.push(`<testcase classname="${cls}" name="${name}" time="0.012"/>`);
      }
    }
    parts.push('</testsuite>');
  }
  parts.push('</testsuites>\n');
  return parts.join('\n');
}

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

const mb = (kb: number): number => Math.round(kb / 1024);

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      cases: { type: 'string', default: '100000' },
      reports: { type: 'string', default: '3' },
      label: { type: 'string', default: 'current' },
      timeout: { type: 'string', default: '600' },
      pipeline: { type: 'string' },
    },
  });
  const cases = Number(values.cases);
  const reports = Number(values.reports);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fh-bench-junit-'));
  const server = await startServerProcess(
    { SERVICE_DATA_DIR: dataDir, LOG_LEVEL: 'warn', SERVICE_RATE_LIMIT_MAX: '0' },
    60_000,
    [],
    values.pipeline ? ['--pipeline', path.resolve(values.pipeline)] : [],
  );
  const pid = server.child.pid!;
  const token = bootstrapToken(dataDir);
  try {
    const branch = `junit-large-${randomBytes(3).toString('hex')}`;
    const bodies = Array.from({ length: reports }, (_, r) => {
      const xml = junitXml(cases, `${r}`);
      const json = JSON.stringify({
        idempotencyKey: `junit-large-${branch}-${r}`,
        resource: { ciProvider: 'github_actions', commitSha: randomBytes(20).toString('hex'), branch, trigger: 'push', shardIndex: r + 1, shardTotal: reports },
        xml,
      });
      return { xmlBytes: Buffer.byteLength(xml), gz: gzipSync(json) };
    });
    await new Promise((r) => setTimeout(r, 2000));
    const baselineKb = statusKb(pid, 'VmRSS');
    let peakKb = baselineKb;
    const timeline: number[] = [];
    let ticks = 0;
    const sampler = setInterval(() => {
      const kb = statusKb(pid, 'VmRSS');
      peakKb = Math.max(peakKb, kb);
      if (ticks++ % 20 === 0) timeline.push(mb(kb));
    }, 50);
    const t0 = performance.now();
    const answers = await Promise.all(
      bodies.map(async (b) => {
        const res = await fetch(`${server.url}/v1/ingest/junit`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-encoding': 'gzip' },
          body: b.gz,
        });
        const text = await res.text();
        return { status: res.status, ms: Math.round(performance.now() - t0), body: text.slice(0, 400) };
      }),
    );
    const peakAtAckKb = peakKb;
    const accepted = answers.filter((a) => a.status === 202).length;
    console.log(answers);
    // Until every accepted case is stored (runs listed with their counts).
    let stored = 0;
    const deadline = performance.now() + Number(values.timeout) * 1000;
    while (accepted > 0 && performance.now() < deadline) {
      const res = await fetch(`${server.url}/v1/runs?branch=${branch}&limit=100`, { headers: { authorization: `Bearer ${token}` } });
      const page = (await res.json()) as { items: { counts: { total: number } }[] };
      stored = page.items.reduce((n, r) => n + r.counts.total, 0);
      if (stored >= accepted * cases) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    const result = {
      label: values.label,
      cases,
      reports,
      xmlBytesPerReport: bodies[0]!.xmlBytes,
      gzipBytesPerReport: bodies[0]!.gz.length,
      answers: answers.map((a) => ({ status: a.status, ackMs: a.ms, ...(a.status === 202 ? {} : { body: a.body }) })),
      storedExecutions: stored,
      complete: stored >= accepted * cases,
      seconds: Math.round(seconds * 10) / 10,
      baselineRssMB: mb(baselineKb),
      // Peak while the reports were received and parsed (HTTP thread), then over the whole run.
      peakRssAtAckMB: mb(peakAtAckKb),
      peakRssMB: mb(Math.max(peakKb, statusKb(pid, 'VmHWM'))),
      rssEverySecondMB: timeline,
    };
    console.log(JSON.stringify(result, null, 2));
    console.log(`wrote ${writeResult(`junit-large-${values.label}`, result)}`);
    return 0;
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
