// Notifications end to end: a history ingested through the real API makes tests flaky; real peers
// on loopback play Slack, Discord, a signed webhook receiver and an SMTP server. Each channel gets
// one flaky_detected per test (durably deduplicated, also across a restart), filters are honoured,
// a hanging sink holds up nothing, and the SSRF guard refuses loopback targets.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { verifyWebhookSignature } from '../../src/domain/notifications.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { captureLogger, startHttpSink, startSmtpSink, type HttpSink, type SinkRequest, type SmtpSink } from '../helpers/peers.js';

const T0 = Date.parse('2026-11-10T08:00:00Z');
const COMMIT = 'abc1234';
type Status = 'pass' | 'fail';

let runSeq = 0;
/** One run; every test not named passes. Same commit throughout, so pass + fail is same-commit variance. */
function run(statuses: Record<string, Status>, tests: string[], commitSha = COMMIT): Record<string, unknown> {
  const r = ++runSeq;
  const at = T0 + r * 600_000;
  const executions = tests.map((title, i) => {
    const status = statuses[title] ?? 'pass';
    return {
      filePath: `src/${title.split(' ')[0]}.test.ts`,
      suite: 'checkout',
      title,
      status,
      startedAt: at + i,
      durationMs: 15,
      ...(status === 'fail' ? { error: { message: `${title}: expected 1 to be 2` } } : {}),
    };
  });
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `notify-${process.pid}-${r}`,
    resource: { ciProvider: 'github_actions', commitSha, branch: 'main', trigger: 'push' },
    run: { status: executions.some((e) => e.status === 'fail') ? 'failed' : 'passed', startedAt: at },
    executions,
  };
}

const alternate = (i: number): Status => (i % 2 === 0 ? 'pass' : 'fail');
const TESTS = ['cart adds', 'cart total', 'coupon applies', 'payment stable'];
const [A, B, C] = ['cart adds', 'coupon applies', 'payment stable'];
/**
 * Eight runs in which A alternates pass/fail on one commit: it ends flaky (one flaky.detected). For
 * the cases that need a flaky_detected to deliver, posted together (one lease or a few: the scorer
 * folds the runs in by start time, and the notification is deduplicated per test anyway).
 */
const flakyA = (): Record<string, unknown>[] => Array.from({ length: 8 }, (_, i) => run({ [A]: alternate(i) }, TESTS));

/** A webhook channel added in the dashboard (project settings, source 'settings'); returns its signing secret. */
async function addSettingsWebhook(td: TestDaemon, target: string): Promise<string> {
  const res = await td.request('PATCH', '/v1/admin/projects/default/settings', { token: td.adminToken, body: { notifications: { channels: [{ kind: 'webhook', target }] } } });
  expect(res.status).toBe(200);
  const secret = res.json.channels.find((c: { target: string }) => c.target === target)?.signingSecret;
  expect(secret).toMatch(/^whsec_/);
  return secret as string;
}

/** Messages of a notification type, whatever the channel's format (Slack, Discord, webhook). */
const HEADINGS: Record<string, string> = { flaky_detected: 'Flaky test detected', quarantine_changed: 'Test quarantined' };
const ofType = (reqs: SinkRequest[], type: string): SinkRequest[] => reqs.filter((r) => r.json?.type === type || r.body.includes(HEADINGS[type]!));
const about = (reqs: SinkRequest[], title: string): SinkRequest[] => reqs.filter((r) => r.body.includes(title));

describe('notifications', () => {
  let slack: HttpSink, discord: HttpSink, projectSlack: HttpSink, hook: HttpSink, configHook: HttpSink, smtp: SmtpSink;
  let td: TestDaemon;
  const seen: { event: DomainEvent; at: number }[] = [];
  const logs = captureLogger();

  beforeAll(async () => {
    [slack, discord, projectSlack, hook, configHook, smtp] = await Promise.all([startHttpSink(), startHttpSink(), startHttpSink(), startHttpSink(), startHttpSink(), startSmtpSink()]);
    td = await startTestDaemon({
      logger: logs.logger,
      env: {
        SERVICE_SLACK_WEBHOOK: `${slack.url}/services/T000/B000/XXXX`,
        SERVICE_DISCORD_WEBHOOK: `${discord.url}/api/webhooks/1/abc`,
        SERVICE_EMAIL_TO: 'team@example.com',
        SERVICE_SMTP_HOST: '127.0.0.1',
        SERVICE_SMTP_PORT: String(smtp.port),
        SERVICE_SMTP_FROM: 'Flakehouse <flakehouse@example.com>',
        SERVICE_NOTIFY_EVENTS: 'flaky_detected,suite_regressed',
        SERVICE_DASHBOARD_URL: 'https://flakes.example.com/',
        SERVICE_ALLOW_PRIVATE_WEBHOOKS: 'true',
      },
    });
  });
  afterAll(async () => {
    await td?.close();
    await Promise.all([slack, discord, projectSlack, hook, configHook, smtp].map((s) => s?.close()));
  });

  it('one flaky_detected per test and channel, across a restart; filters; signed webhook; email', async () => {
    const listen = (t: TestDaemon): void => {
      t.daemon.runtime.onEvent((event) => seen.push({ event, at: Date.now() }));
    };
    listen(td);
    // Per-project channels: config-synced (a Slack that wants only quarantine changes, a webhook
    // whose secret the server makes) and one added in the dashboard (signed, every type).
    const routing = await td.request('PUT', '/v1/notifications/routing', {
      body: { channels: [{ kind: 'slack', target: `${projectSlack.url}/project`, events: ['quarantine_changed'] }, { kind: 'webhook', target: `${configHook.url}/hook` }] },
    });
    expect(routing.status).toBe(200);
    const secret = await addSettingsWebhook(td, `${hook.url}/flakehouse`);

    // Phase 1: A alternates pass/fail on one commit → flaky after 5 samples.
    const postedAt = new Map<string, number>();
    for (let i = 0; i < 8; i++) {
      const t = Date.now();
      const [receipt] = await td.ingest(run({ [A]: alternate(i) }, TESTS));
      postedAt.set(receipt!, t);
    }
    const detectedA = seen.filter((s) => s.event.type === 'flaky.detected');
    expect(detectedA).toHaveLength(1);
    const testA = detectedA[0]!.event.data.testIdentityId as string;
    await td.waitFor(async () => about(slack.requests, A).length > 0 && about(discord.requests, A).length > 0 && about(hook.requests, A).length > 0 && smtp.messages.length > 0);

    // Latency: event committed and handed to the events pipeline → the sink has it.
    const committedAt = detectedA[0]!.at;
    const latencies = {
      slack: about(slack.requests, A)[0]!.receivedAt - committedAt,
      discord: about(discord.requests, A)[0]!.receivedAt - committedAt,
      webhook: about(hook.requests, A)[0]!.receivedAt - committedAt,
      email: smtp.messages[0]!.receivedAt - committedAt,
    };
    // And end to end: the POST of the run that made A flaky → the sink has the message.
    const runOfA = seen.slice(seen.indexOf(detectedA[0]!)).find((x) => x.event.type === 'run.processed')!;
    const posted = postedAt.get(runOfA.event.data.receiptId as string)!;
    console.log(
      `notification latency, ms: event dispatched → sink ${JSON.stringify(latencies)}; run POSTed → sink ${JSON.stringify({ slack: about(slack.requests, A)[0]!.receivedAt - posted, email: smtp.messages[0]!.receivedAt - posted })}`,
    );

    // Slack: Block Kit, deep link.
    const s = about(slack.requests, A)[0]!;
    expect(s.path).toBe('/services/T000/B000/XXXX');
    expect(s.json.blocks[0]).toEqual({ type: 'header', text: { type: 'plain_text', text: 'Flaky test detected' } });
    expect(s.json.blocks[1].text.text).toContain(`\`checkout › ${A}\` is now flaky`);
    expect(s.json.blocks[2].elements[0].url).toBe(`https://flakes.example.com/projects/default/tests/${testA}`);
    // Discord: an embed linking to the test.
    const d = about(discord.requests, A)[0]!;
    expect(d.json.embeds[0]).toMatchObject({ title: 'Flaky test detected', url: `https://flakes.example.com/projects/default/tests/${testA}` });
    // Signed webhook: the signature verifies over the raw body with the channel's secret.
    const h = about(hook.requests, A)[0]!;
    expect(h.headers['x-service-event']).toBe('flaky_detected');
    expect(verifyWebhookSignature(secret, String(h.headers['x-service-signature']), h.body, Math.floor(Date.now() / 1000))).toBe(true);
    expect(verifyWebhookSignature('wrong', String(h.headers['x-service-signature']), h.body, Math.floor(Date.now() / 1000))).toBe(false);
    expect(h.json).toMatchObject({ type: 'flaky_detected', project: 'default', dedupeKey: `flaky_detected:${testA}`, data: { test: { testId: testA, title: A, suite: 'checkout' } } });
    // Email through SMTP.
    const mail = smtp.messages[0]!;
    expect(mail.to).toEqual(['team@example.com']);
    expect(mail.from).toBe('flakehouse@example.com');
    expect(mail.subject).toBe(`[Flakehouse] default: Flaky test detected: checkout › ${A} is now flaky (score ${(detectedA[0]!.event.data.score as number).toFixed(2)})`);
    expect(mail.text).toContain(`https://flakes.example.com/projects/default/tests/${testA}`);
    expect(mail.text).toContain(`File: src/cart.test.ts`);

    // A person quarantines C: the project Slack (quarantine only) and the signed webhook (all types)
    // hear of it; the global channels (SERVICE_NOTIFY_EVENTS without quarantine_changed) do not.
    const created = seen.find((x) => x.event.type === 'identity.created' && x.event.data.title === C)!;
    const testC = created.event.data.testIdentityId as string;
    const q = await td.request('POST', `/v1/tests/${testC}/quarantine`, { body: { decision: 'quarantined', reason: 'blocks the release' } });
    expect(q.status).toBe(200);
    await td.waitFor(async () => projectSlack.requests.length > 0 && ofType(hook.requests, 'quarantine_changed').length > 0);
    expect(projectSlack.requests[0]!.json.blocks[1].text.text).toBe(`\`checkout › ${C}\` was quarantined by a person: blocks the release`);

    // Phase 2, after a restart: A breaks (fails every run of new commits: broken, no longer a
    // candidate), is fixed and is flaky again on its old evidence, which detects it a second time;
    // the durable dedupe key keeps every channel at one message.
    td = await td.restart();
    // The dedupe keys are in the storage extension's environment, not an LMDB of the notifier's own.
    expect(existsSync(path.join(td.dataDir, 'component-state', 'data.mdb'))).toBe(true);
    expect(existsSync(path.join(td.dataDir, 'notify'))).toBe(false);
    listen(td);
    for (let i = 0; i < 8; i++) await td.ingest(run({ [A]: 'fail' }, TESTS, `badc0de${i}`));
    for (let i = 0; i < 3; i++) await td.ingest(run({ [A]: 'pass' }, TESTS, `f1ced0${i}`));
    expect(seen.filter((x) => x.event.type === 'flaky.detected' && x.event.data.testIdentityId === testA).length).toBe(2);
    // Then B flakes: its message is queued behind anything A might still have produced, so once B
    // is in, every channel has had its chance to repeat A.
    // One post: B's flaky_detected comes from where its 8 runs leave it, one lease or many.
    await td.ingest(...Array.from({ length: 8 }, (_, i) => run({ [A]: alternate(i), [B]: alternate(i) }, TESTS)));
    await td.waitFor(async () => about(slack.requests, B).length > 0 && about(discord.requests, B).length > 0 && about(hook.requests, B).length > 0 && smtp.messages.length >= 2);

    for (const sink of [slack, discord, hook]) {
      expect(ofType(about(sink.requests, A), 'flaky_detected')).toHaveLength(1);
      expect(ofType(about(sink.requests, B), 'flaky_detected')).toHaveLength(1);
    }
    expect(smtp.messages.map((m) => m.subject.includes(A))).toEqual([true, false]);
    expect(smtp.messages[1]!.subject).toContain(B);
    // Filters: global channels never got the quarantine change, the project Slack never a flake.
    for (const sink of [slack, discord]) expect(ofType(sink.requests, 'quarantine_changed')).toHaveLength(0);
    expect(smtp.messages.some((m) => m.subject.includes('quarantined'))).toBe(false);
    expect(projectSlack.requests).toHaveLength(1);
    // The config-synced webhook is signed too, with the secret the admin API shows for it, and
    // deduplicated like the others.
    const settings = await td.request('GET', '/v1/admin/projects/default/settings', { token: td.adminToken });
    const configSecret = settings.json.configChannels.find((c: { kind: string }) => c.kind === 'webhook').signingSecret as string;
    expect(ofType(about(configHook.requests, A), 'flaky_detected')).toHaveLength(1);
    for (const r of configHook.requests) {
      expect(verifyWebhookSignature(configSecret, String(r.headers['x-service-signature']), r.body, Math.floor(Date.now() / 1000))).toBe(true);
    }
    expect(logs.lines.some((l) => l.msg === 'webhook channel has no signing secret; not delivered')).toBe(false);
  });
});

describe('a slow or unreachable sink', () => {
  let hanging: HttpSink;
  let td: TestDaemon;
  afterAll(async () => {
    await td?.close();
    await hanging?.close();
  });

  it('does not hold up run processing', async () => {
    hanging = await startHttpSink(() => 'hang');
    const closedPort = await startHttpSink();
    const unreachable = closedPort.url;
    await closedPort.close();
    td = await startTestDaemon({
      env: { SERVICE_SLACK_WEBHOOK: `${hanging.url}/slow`, SERVICE_DISCORD_WEBHOOK: `${unreachable}/gone`, SERVICE_ALLOW_PRIVATE_WEBHOOKS: 'true' },
    });
    await td.ingest(...flakyA());
    // The Slack sink has the message and is sitting on it…
    await td.waitFor(async () => hanging.open === 1);
    // …while further runs are accepted, processed and readable as usual.
    const receipts = await td.ingest(...Array.from({ length: 3 }, (_, i) => run({ [A]: alternate(i) }, TESTS)));
    expect(receipts).toHaveLength(3);
    const runs = await td.request('GET', '/v1/runs?limit=50');
    expect(runs.status).toBe(200);
    expect(runs.json.items).toHaveLength(11);
    expect(hanging.open).toBe(1);
    expect(hanging.requests).toHaveLength(1);
  });
});

describe('SSRF guard and retries', () => {
  let sinks: HttpSink[] = [];
  let td: TestDaemon;
  const dir = mkdtempSync(path.join(tmpdir(), 'fh-notify-pipeline-'));
  afterAll(async () => {
    await td?.close();
    await Promise.all(sinks.map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses loopback targets without SERVICE_ALLOW_PRIVATE_WEBHOOKS, with a log line', async () => {
    const loopback = await startHttpSink();
    sinks = [loopback];
    const logs = captureLogger();
    td = await startTestDaemon({ logger: logs.logger, env: { SERVICE_SLACK_WEBHOOK: `${loopback.url}/plain-http` } });
    // A project channel with https and a name that resolves to loopback: refused after DNS.
    await td.request('PUT', '/v1/notifications/routing', { body: { channels: [{ kind: 'discord', target: `https://localhost:${loopback.port}/api/webhooks/1/x` }] } });
    await td.ingest(...flakyA());
    const refused = await td.waitFor(async () => {
      const lines = logs.lines.filter((l) => l.msg === 'notification refused; dropped');
      return lines.length >= 2 ? lines : null;
    });
    expect(refused.map((l) => l.channel).sort()).toEqual(['discord', 'slack']);
    expect(refused.find((l) => l.channel === 'slack')!.err).toMatch(/http is not allowed/);
    expect(refused.find((l) => l.channel === 'discord')!.err).toMatch(/localhost resolves to the private or loopback address/);
    expect(loopback.requests).toHaveLength(0);
  });

  it('retries a failing sink with backoff, delivers once it recovers, drops one that keeps failing', async () => {
    await td.close();
    let calls = 0;
    const flaky = await startHttpSink(() => (++calls <= 2 ? { status: 503 } : { status: 200 }));
    const down = await startHttpSink(() => ({ status: 500 }));
    sinks.push(flaky, down);
    // Short backoff through the pipeline file, as an operator would tune it.
    const file = path.join(dir, 'pipeline.yaml');
    const yaml = readFileSync(path.resolve(import.meta.dirname, '../../pipelines/default.yaml'), 'utf8').replace(
      /^ {2}notify: \{\}.*$/m,
      '  notify: { maxAttempts: 3, retryInitialMs: 20, retryMaxMs: 50 }',
    );
    expect(yaml).toContain('retryInitialMs: 20');
    writeFileSync(file, yaml);
    const logs = captureLogger();
    td = await startTestDaemon({
      logger: logs.logger,
      pipelineFile: file,
      env: { SERVICE_SLACK_WEBHOOK: `${flaky.url}/recovering`, SERVICE_DISCORD_WEBHOOK: `${down.url}/down`, SERVICE_ALLOW_PRIVATE_WEBHOOKS: 'true' },
    });
    await td.ingest(...flakyA());
    const dropped = await td.waitFor(async () => logs.lines.find((l) => l.msg === 'notification failed 3 times; dropped'));
    await td.waitFor(async () => logs.lines.some((l) => l.msg === 'notification delivered' && l.channel === 'slack'));
    expect(dropped).toMatchObject({ channel: 'discord', type: 'flaky_detected', attempts: 3 });
    expect(down.requests).toHaveLength(3);
    expect(flaky.requests).toHaveLength(3);
    expect(logs.lines.filter((l) => l.msg === 'notification failed; will retry').map((l) => l.retryInMs)).toEqual(expect.arrayContaining([20, 50]));
  });
});
