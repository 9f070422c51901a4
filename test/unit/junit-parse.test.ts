import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TEST_STATUSES } from '../../client/src/contract/batch.js';
import type { ExecutionInput } from '../../client/src/contract/batch.js';
import { parseJUnit } from '../../client/src/contract/junit/parse.js';
import type { JUnitParseResult } from '../../client/src/contract/junit/parse.js';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/junit');
const NOW = Date.UTC(2025, 0, 2, 3, 4, 5);

const fixtureFiles = ['dorny', 'mikepenz', 'vitest', 'jest', 'playwright'].flatMap((dir) =>
  readdirSync(path.join(FIXTURES, dir))
    .filter((f) => f.endsWith('.xml'))
    .sort()
    .map((f) => `${dir}/${f}`),
);

function load(rel: string): string {
  return readFileSync(path.join(FIXTURES, rel), 'utf8');
}

type Ok = Extract<JUnitParseResult, { ok: true }>;

function parseOk(xml: string): Ok {
  const result = parseJUnit(xml, { now: NOW });
  if (!result.ok) throw new Error(`expected ok, got ${result.error}: ${result.message}`);
  return result;
}

function fixture(rel: string): Ok {
  return parseOk(load(rel));
}

function statusCounts(executions: ExecutionInput[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const e of executions) counts[e.status] = (counts[e.status] ?? 0) + 1;
  return counts;
}

/** One testsuite around the given testcase markup. */
function suiteXml(body: string, suiteAttrs = 'name="S"'): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuite ${suiteAttrs}>\n${body}\n</testsuite>`;
}

describe('parseJUnit on every fixture', () => {
  it('finds the fixtures', () => {
    expect(fixtureFiles.length).toBeGreaterThanOrEqual(60);
  });

  it.each(fixtureFiles)('%s: ok with valid executions, or a clear rejection', (rel) => {
    const result = parseJUnit(load(rel), { now: NOW });
    if (!result.ok) {
      expect(['invalid_junit_xml', 'empty_report']).toContain(result.error);
      expect(result.message.length).toBeGreaterThan(0);
      return;
    }
    expect(result.executions.length).toBeGreaterThanOrEqual(1);
    expect(['passed', 'failed']).toContain(result.runStatus);
    expect(Number.isFinite(result.startedAt)).toBe(true);
    expect(result.finishedAt).toBeGreaterThanOrEqual(result.startedAt);
    result.executions.forEach((e, i) => {
      expect(Number.isInteger(e.durationMs) && e.durationMs >= 0).toBe(true);
      expect(TEST_STATUSES).toContain(e.status);
      expect(Number.isInteger(e.attempt) && e.attempt >= 1).toBe(true);
      expect(Number.isFinite(e.startedAt)).toBe(true);
      expect(typeof e.title).toBe('string');
      expect(typeof e.suite).toBe('string');
      expect(typeof e.filePath).toBe('string');
      if (e.attempt === 1) {
        expect(e.retryOfIndex).toBeUndefined();
      } else {
        // retryOfIndex points back at attempt 1 of the same test.
        const first = result.executions[e.retryOfIndex!]!;
        expect(e.retryOfIndex).toBeLessThan(i);
        expect(first.attempt).toBe(1);
        expect([first.filePath, first.suite, first.title]).toEqual([e.filePath, e.suite, e.title]);
      }
      if (e.error) {
        expect(e.error.message.length).toBeGreaterThan(0);
        expect(e.error.message.length).toBeLessThanOrEqual(4000);
        expect((e.error.stack ?? '').length).toBeLessThanOrEqual(32000);
      }
      if (e.status === 'fail') expect(e.error).toBeDefined();
    });
  });

  it('rejects the truncated surefire report with a line number', () => {
    const result = parseJUnit(
      load('mikepenz/corrupt-junit__e2e-tests__corrupt__target__sf-reports__TEST-test.CorruptTest.xml'),
      { now: NOW },
    );
    expect(result).toMatchObject({ ok: false, error: 'invalid_junit_xml' });
    expect(!result.ok && result.message).toMatch(/line 18, column \d+/);
  });

  it.each([
    'dorny/empty__java-junit.xml',
    'dorny/empty__jest-junit-empty-testsuite.xml',
    'dorny/empty__jest-junit.xml',
    'dorny/empty__phpunit-empty.xml',
    'mikepenz/cunit__testEmpty.xml',
  ])('%s is an empty report', (rel) => {
    expect(parseJUnit(load(rel), { now: NOW })).toEqual({
      ok: false,
      error: 'empty_report',
      message: 'no <testcase> element found',
    });
  });

  it.each(['dorny/dotnet-nunit.xml', 'dorny/external__nunit-sample.xml'])(
    '%s (NUnit <test-run>, not JUnit) is refused',
    (rel) => {
      const result = parseJUnit(load(rel), { now: NOW });
      expect(result).toMatchObject({ ok: false, error: 'invalid_junit_xml' });
      expect(!result.ok && result.message).toContain('<test-run>');
    },
  );
});

describe('parseJUnit on concrete fixtures', () => {
  it('dorny/jest-junit.xml: statuses, message from text, suite fallback, zone-less timestamp', () => {
    const r = fixture('dorny/jest-junit.xml');
    expect(r.executions).toHaveLength(6);
    expect(statusCounts(r.executions)).toEqual({ pass: 1, fail: 4, skip: 1 });
    expect(r.runStatus).toBe('failed');
    // "2020-10-27T21:39:41" has no zone: read as UTC.
    expect(r.startedAt).toBe(Date.UTC(2020, 9, 27, 21, 39, 41));
    expect(r.finishedAt).toBe(r.startedAt + 4); // longest case: 0.004 s
    const failing = r.executions[1]!;
    expect(failing).toMatchObject({ suite: 'Test 1 › Test 1.1', title: 'Failing test', durationMs: 2 });
    expect(failing.error!.message).toBe('Error: expect(received).toBeTruthy()');
    expect(failing.error!.type).toBeUndefined();
    expect(failing.error!.stack).toMatch(/^Error: expect\(received\)\.toBeTruthy\(\)\n\nReceived: false\n {4}at Object\.<anonymous>/);
    // classname="" -> the enclosing suite's name, also used as the file path.
    expect(r.executions[4]).toMatchObject({
      suite: '__tests__\\second.test.js',
      filePath: '__tests__\\second.test.js',
      title: 'Timeout test',
      status: 'fail',
    });
    expect(r.executions[5]).toMatchObject({ title: 'Skipped test', status: 'skip' });
    expect(r.executions[5]!.error).toBeUndefined();
  });

  it('dorny/external__java__pulsar-test-report.xml: 808 cases, TestNG repeats become attempts', () => {
    const r = fixture('dorny/external__java__pulsar-test-report.xml');
    expect(r.executions).toHaveLength(808);
    expect(statusCounts(r.executions)).toEqual({ pass: 793, fail: 1, skip: 14 });
    // 138 test cases repeat an earlier (classname, name) pair (data providers / TestNG retries).
    expect(r.executions.filter((e) => e.attempt > 1)).toHaveLength(138);
    expect(r.runStatus).toBe('failed');
    expect(r.executions[0]).toMatchObject({
      title: 'testVersionStrings',
      suite: 'org.apache.pulsar.AddMissingPatchVersionTest',
      filePath: 'org/apache/pulsar/AddMissingPatchVersionTest',
      status: 'skip',
      attempt: 1,
      durationMs: 99,
    });
    expect(r.executions[1]).toMatchObject({ status: 'fail', attempt: 2, retryOfIndex: 0, durationMs: 17 });
    expect(r.executions[1]!.error).toMatchObject({
      type: 'java.lang.AssertionError',
      message: 'expected [1.2.1] but found [1.2.0]',
    });
  });

  it('dorny/external__java__TEST-org.apache.pulsar.AddMissingPatchVersionTest.xml: " UTC" timestamps', () => {
    const r = fixture('dorny/external__java__TEST-org.apache.pulsar.AddMissingPatchVersionTest.xml');
    expect(r.executions.map((e) => [e.status, e.attempt])).toEqual([
      ['skip', 1],
      ['fail', 2],
    ]);
    expect(r.executions.every((e) => e.startedAt === Date.UTC(2021, 2, 7, 10, 36, 56))).toBe(true);
  });

  // Speed is measured by benchmarks, not asserted here (a busy CI machine would make it flaky).
  it('dorny/external__jest__jest-test-results.xml: the 600 KB report, counts', () => {
    const xml = load('dorny/external__jest__jest-test-results.xml');
    expect(xml.length).toBeGreaterThan(600_000);
    const r = parseOk(xml);
    expect(r.executions).toHaveLength(4239);
    expect(statusCounts(r.executions)).toEqual({ pass: 4207, skip: 30, fail: 2 });
    expect(r.executions.filter((e) => e.attempt > 1)).toHaveLength(257);
  });

  it('mikepenz/maven_surefire_flaky__surefire-report.xml: flakyFailure -> failed attempt + flaky', () => {
    const r = fixture('mikepenz/maven_surefire_flaky__surefire-report.xml');
    const base = {
      filePath: 'io/sodadata/dependson/soda/integrations/msteams/MicrosoftTeamsCrudTest',
      suite: 'io.sodadata.dependson.soda.integrations.msteams.MicrosoftTeamsCrudTest',
      title: 'createWebhook',
      startedAt: NOW,
      durationMs: 683,
    };
    expect(r.executions).toHaveLength(2);
    expect(r.executions[0]).toMatchObject({ ...base, status: 'fail', attempt: 1 });
    expect(r.executions[0]!.retryOfIndex).toBeUndefined();
    expect(r.executions[0]!.error).toMatchObject({
      type: 'java.lang.AssertionError',
      message: 'Expected: <false>\n     but: was <true>',
    });
    // The stack comes from <stackTrace>, not the nested <system-err>.
    expect(r.executions[0]!.error!.stack).toMatch(/^java\.lang\.AssertionError: \n\nExpected: <false>/);
    expect(r.executions[0]!.error!.stack).toMatch(/ArrayList\.java:1596\)$/);
    expect(r.executions[0]!.error!.stack).not.toContain('Some error output here');
    expect(r.executions[1]).toEqual({ ...base, status: 'flaky', attempt: 2, retryOfIndex: 0 });
    expect(r.runStatus).toBe('passed');
  });

  it('mikepenz/junit_flaky_failure__marathon_junit_report.xml: message from the stackTrace CDATA', () => {
    const r = fixture('mikepenz/junit_flaky_failure__marathon_junit_report.xml');
    expect(r.executions.map((e) => e.status)).toEqual(['fail', 'flaky']);
    expect(r.executions[0]!.error).toEqual({
      type: 'rerun exception',
      message: 'junit.framework.AssertionFailedError',
      stack: 'junit.framework.AssertionFailedError',
    });
    expect(r.startedAt).toBe(Date.UTC(2024, 0, 21, 8, 17, 32));
  });

  it('mikepenz/junit_flaky_failure__mixed_flaky_and_passed.xml', () => {
    const r = fixture('mikepenz/junit_flaky_failure__mixed_flaky_and_passed.xml');
    expect(r.executions.map((e) => [e.title, e.status, e.attempt])).toEqual([
      ['testFlaky', 'fail', 1],
      ['testFlaky', 'flaky', 2],
      ['testPassed', 'pass', 1],
      ['testAnotherPassed', 'pass', 1],
    ]);
    expect(r.executions[0]!.error).toEqual({
      type: 'java.lang.AssertionError',
      message: 'java.lang.AssertionError: Flaky failure',
      stack: 'java.lang.AssertionError: Flaky failure',
    });
    expect(r.runStatus).toBe('passed');
  });

  it('mikepenz/flaky_retries__flaky_success_first.xml: a fail after the pass stays a failure', () => {
    const r = fixture('mikepenz/flaky_retries__flaky_success_first.xml');
    expect(r.executions.map((e) => [e.status, e.attempt, e.retryOfIndex])).toEqual([
      ['pass', 1, undefined],
      ['fail', 2, 0],
      ['fail', 3, 0],
    ]);
    expect(r.executions.map((e) => e.error?.message)).toEqual([undefined, 'later failure', 'later error']);
    expect(r.executions[0]).toMatchObject({
      filePath: '/home/runner/work/tests/test_order.py',
      suite: 'test_order.TestOrder',
      title: 'test_success_first',
      durationMs: 1000,
    });
    expect(r.runStatus).toBe('failed');
  });

  it('mikepenz/flaky_retries__flaky_all_failures.xml: three failed attempts', () => {
    const r = fixture('mikepenz/flaky_retries__flaky_all_failures.xml');
    expect(r.executions.map((e) => [e.status, e.attempt, e.retryOfIndex])).toEqual([
      ['fail', 1, undefined],
      ['fail', 2, 0],
      ['fail', 3, 0],
    ]);
    expect(r.executions.map((e) => e.error)).toEqual([
      { message: 'first failure', stack: 'First attempt failed' },
      { message: 'second failure', stack: 'Second attempt failed' },
      { message: 'third error', stack: 'Third attempt errored' },
    ]);
    expect(r.runStatus).toBe('failed');
    expect([r.startedAt, r.finishedAt]).toEqual([NOW, NOW + 1000]);
  });

  it('mikepenz/flaky_retries__flaky_with_classname_file.xml: pass after fails is flaky; other classes not merged', () => {
    const r = fixture('mikepenz/flaky_retries__flaky_with_classname_file.xml');
    expect(r.executions.map((e) => [e.suite, e.title, e.status, e.attempt, e.retryOfIndex])).toEqual([
      ['test_foo.TestFoo', 'test_foo', 'fail', 1, undefined],
      ['test_foo.TestFoo', 'test_foo', 'fail', 2, 0],
      ['test_foo.TestFoo', 'test_foo', 'flaky', 3, 0],
      ['test_bar.TestBar', 'test_foo', 'pass', 1, undefined],
      ['test_baz.TestBaz', 'test_baz', 'pass', 1, undefined],
    ]);
    expect(r.runStatus).toBe('passed');
  });

  it('mikepenz/junit-web-test__expectedRetries.xml: interleaved repeat, non-numeric time', () => {
    const r = fixture('mikepenz/junit-web-test__expectedRetries.xml');
    expect(r.executions).toHaveLength(8);
    expect(statusCounts(r.executions)).toEqual({ pass: 4, fail: 2, skip: 1, flaky: 1 });
    expect(r.executions[0]).toMatchObject({ title: 'is equivalent to map (f.g) f a', durationMs: 0 }); // time="<<computed>>"
    expect(r.executions[4]).toMatchObject({ title: 'retried flaky test', status: 'fail', attempt: 1 });
    expect(r.executions[6]).toMatchObject({ title: 'retried flaky test', status: 'flaky', attempt: 2, retryOfIndex: 4 });
    expect(r.runStatus).toBe('failed'); // "asserts error" never passed
  });

  it('mikepenz/junit-server-test__report.xml: go test rerun after failure', () => {
    const r = fixture('mikepenz/junit-server-test__report.xml');
    expect(r.executions.map((e) => [e.title, e.status, e.attempt])).toEqual([
      ['TestWebSocketReconnectRace', 'fail', 1],
      ['TestCreateChannelBookmark', 'skip', 1],
      ['TestWebSocketUpgrade', 'pass', 1],
      ['TestWebSocketReconnectRace', 'flaky', 2],
    ]);
    expect(r.executions[0]!.error).toEqual({
      message: 'Failed',
      stack: '=== RUN   TestWebSocketReconnectRace --- FAIL: TestWebSocketReconnectRace (3.32s)',
    });
    expect(r.runStatus).toBe('passed');
    expect(r.startedAt).toBe(Date.UTC(2024, 9, 24, 12, 7, 54));
    expect(r.finishedAt).toBe(r.startedAt + 7780);
  });

  it('mikepenz/python__report_flaky.xml: four distinct cases, microsecond timestamp', () => {
    const r = fixture('mikepenz/python__report_flaky.xml');
    expect(r.executions.map((e) => [e.title, e.status, e.attempt])).toEqual([
      ['test_which_succeeds', 'pass', 1],
      ['test_which_fails', 'fail', 1],
      ['test_with_error', 'fail', 1],
      ['test_with_flaky_success', 'pass', 1],
    ]);
    // A pytest report: the module's path, no class (client/src/contract/junit-names.ts).
    expect(r.executions[1]).toMatchObject({ suite: '', filePath: 'python/test_sample.py' });
    expect(r.executions[1]!.error!.message).toBe("AssertionError: assert 'test' == 'xyz'\n  - xyz\n  + test");
    expect(r.executions[1]!.error!.stack).toMatch(/^def test_which_fails\(\):\n[\s\S]*>\s+assert event/);
    expect(r.startedAt).toBe(Date.UTC(2020, 9, 12, 18, 46, 11, 226));
    expect(r.runStatus).toBe('failed');
  });

  it('mikepenz/nested__multi-level.xml: suites inside <testsuites>, timestamp from the root', () => {
    const r = fixture('mikepenz/nested__multi-level.xml');
    expect(r.executions.map((e) => [e.filePath, e.suite, e.status])).toEqual([
      ['corp/proj/PingIntegrationTest', 'corp.proj.PingIntegrationTest', 'pass'],
      ['corp/proj/PingIntegrationTest', 'corp.proj.PingIntegrationTest', 'pass'],
      [
        'corp/proj2/MultiUserChatRolesAffiliationsPrivilegesIntegrationTest',
        'corp.proj2.MultiUserChatRolesAffiliationsPrivilegesIntegrationTest',
        'pass',
      ],
    ]);
    expect(r.executions.map((e) => e.durationMs)).toEqual([54, 0, 46]);
    expect(r.startedAt).toBe(Date.UTC(2024, 3, 19, 8, 20, 31, 569));
    expect(r.runStatus).toBe('passed');
  });

  it('mikepenz/nested__junit.xml: four levels of suites, empty classname takes the nearest suite name', () => {
    const r = fixture('mikepenz/nested__junit.xml');
    expect(r.executions.map((e) => [e.suite, e.filePath, e.title, e.status, e.durationMs])).toEqual([
      ['TestA', 'TestA', 'A', 'fail', 10_000],
      ['TestA', 'TestA', 'B', 'pass', 20_000],
      ['TestB', 'TestB', 'A', 'pass', 30_000],
      ['TestB', 'TestB', 'B', 'fail', 40_000],
      ['packet', 'packet', 'A', 'fail', 50_000],
    ]);
    expect(r.executions.every((e) => e.attempt === 1)).toBe(true);
    expect(r.executions[0]!.error).toEqual({ message: 'failure' });
  });

  it('dorny/external__java__junit4-complete.xml: skipped, message attrs, properties, attachments', () => {
    const r = fixture('dorny/external__java__junit4-complete.xml');
    expect(r.executions).toHaveLength(8);
    expect(statusCounts(r.executions)).toEqual({ pass: 5, skip: 1, fail: 2 });
    const byTitle = new Map(r.executions.map((e) => [e.title, e]));
    expect(byTitle.get('testCase4')).toMatchObject({ status: 'skip', filePath: 'tests/registration.code' });
    // message attribute, no element text (only a comment) -> no stack
    expect(byTitle.get('testCase5')!.error).toEqual({ type: 'AssertionError', message: 'Expected value did not match.' });
    expect(byTitle.get('testCase6')!.error).toEqual({ type: 'ArithmeticError', message: 'Division by zero.' });
    const case8 = byTitle.get('testCase8')!;
    expect(case8.attributes).toEqual({
      priority: 'high',
      language: 'english',
      author: 'Adrian',
      attachment: 'screenshots/users.png',
      description:
        'This text describes the purpose of this test case and provides\n' +
        '                    an overview of what the test does and how it works.',
    });
    expect(case8.artifacts).toEqual([
      { name: 'dashboard.png', contentType: 'image/png', path: 'screenshots/dashboard.png' },
      { name: 'users.png', contentType: 'image/png', path: 'screenshots/users.png' },
    ]);
    expect(r.startedAt).toBe(Date.UTC(2021, 3, 2, 15, 48, 23));
  });

  it('message attribute vs text: xunit attr, jest <error> text', () => {
    const xunit = fixture('mikepenz/xunit__report.xml');
    expect(xunit.executions[2]).toMatchObject({
      title: 'test_my_sum_fail',
      filePath: 'main.c', // file attr without classname
      suite: 'CI basic test',
      status: 'fail',
      error: { type: 'failure', message: 'Expected 2 Was 0' },
    });
    expect(xunit.executions[2]!.error!.stack).toBeUndefined();

    const jest = fixture('dorny/test-errors__jest__jest-test-results.xml');
    expect(jest.executions).toHaveLength(2);
    const err = jest.executions[0]!.error!;
    expect(err.message).toBe('● Test suite failed to run');
    expect(err.type).toBeUndefined();
    expect(err.stack).toMatch(/^● Test suite failed to run\n\n {4}tsconfig\.json:13:3 - error TS6258: 'typeRoots'/);
    expect(jest.startedAt).toBe(NOW); // timestamp="1970-01-01T00:00:00" is a placeholder: read as "now"
  });

  it('dorny/junit-with-message.xml: empty type attribute is omitted', () => {
    const r = fixture('dorny/junit-with-message.xml');
    expect(r.executions).toEqual([
      {
        filePath: 'Fails',
        suite: 'Fails',
        title: 'Test',
        status: 'fail',
        attempt: 1,
        startedAt: NOW,
        durationMs: 0,
        error: { message: 'error', stack: 'error.cpp:01\n      Expected: true\n      Which is: false >' },
      },
    ]);
  });

  it('mikepenz/multiple_failures__test_multiple_failures.xml: first failure is the error, others kept in the stack', () => {
    const r = fixture('mikepenz/multiple_failures__test_multiple_failures.xml');
    expect(statusCounts(r.executions)).toEqual({ fail: 2, skip: 1, pass: 1 });
    const err = r.executions[0]!.error!;
    expect(err).toMatchObject({ type: 'AssertionError', message: 'First assertion failed' });
    expect(err.stack).toContain('First failure stack trace details');
    expect(err.stack).toContain('Third failure stack trace details');
  });

  it('mikepenz/issues__testDisabled.xml and testFailedDisabled.xml: status="disabled" is a skip', () => {
    const r = fixture('mikepenz/issues__testDisabled.xml');
    expect(r.executions).toHaveLength(22);
    expect(statusCounts(r.executions)).toEqual({ skip: 10, fail: 6, pass: 6 });
    expect(r.executions.every((e) => e.suite === 'factorial' && e.filePath === 'factorial')).toBe(true);

    const disabled = fixture('mikepenz/issues__testFailedDisabled.xml');
    expect(disabled.executions.map((e) => e.status)).toEqual(['skip']);
    expect(disabled.runStatus).toBe('passed');
  });
});

describe('parseJUnit on hand-written XML', () => {
  it('refuses a DOCTYPE (billion laughs) without expanding it', () => {
    const lol = `<?xml version="1.0"?>
<!DOCTYPE lolz [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<testsuite name="s"><testcase name="&lol3;"/></testsuite>`;
    expect(parseJUnit(lol, { now: NOW })).toEqual({
      ok: false,
      error: 'invalid_junit_xml',
      message: 'DOCTYPE is not allowed',
    });
  });

  it('refuses an external-entity DOCTYPE (XXE)', () => {
    const xxe = `<?xml version="1.0"?>
<!DOCTYPE t [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<testsuite><testcase name="&xxe;"/></testsuite>`;
    expect(parseJUnit(xxe, { now: NOW })).toMatchObject({ error: 'invalid_junit_xml', message: 'DOCTYPE is not allowed' });
  });

  it('treats unknown entities as a parse error', () => {
    const result = parseJUnit(suiteXml('<testcase name="a&nbsp;b"/>'), { now: NOW });
    expect(result).toMatchObject({ ok: false, error: 'invalid_junit_xml' });
    expect(!result.ok && result.message).toMatch(/entity at line 3, column \d+/);
  });

  it('reports malformed XML with a 1-based line and a column', () => {
    const xml = '<testsuites>\n  <testsuite name="s">\n    <testcase name="a">\n  </testsuite>\n</testsuites>';
    expect(parseJUnit(xml, { now: NOW })).toEqual({
      ok: false,
      error: 'invalid_junit_xml',
      message: 'Unexpected close tag at line 4, column 14',
    });
    const truncated = parseJUnit('<testsuite>\n<testcase name="a">', { now: NOW });
    expect(truncated).toMatchObject({ ok: false, error: 'invalid_junit_xml' });
    expect(!truncated.ok && truncated.message).toMatch(/at line 2, column \d+/);
  });

  it('refuses input that is not a JUnit document', () => {
    expect(parseJUnit('', { now: NOW })).toMatchObject({ ok: false, error: 'invalid_junit_xml' });
    expect(parseJUnit('{"tests": []}', { now: NOW })).toMatchObject({ ok: false, error: 'invalid_junit_xml' });
    expect(parseJUnit('<html><body/></html>', { now: NOW })).toMatchObject({
      ok: false,
      error: 'invalid_junit_xml',
      message: 'root element <html> is not <testsuites> or <testsuite>',
    });
    expect(parseJUnit('<testsuite><testcase name="a"/></testsuite><testsuite/>', { now: NOW })).toMatchObject({
      ok: false,
      error: 'invalid_junit_xml',
      message: expect.stringMatching(/^Multiple root elements at line 1/) as unknown,
    });
  });

  it('accepts a leading byte-order mark', () => {
    expect(parseOk(`\uFEFF${suiteXml('<testcase name="a"/>')}`).executions).toHaveLength(1);
  });

  it('falls back to the suite name when classname is missing, and trims attributes', () => {
    const r = parseOk(suiteXml('<testcase name="  spaced title " time=" 0.25 "/>', 'name=" My Suite "'));
    expect(r.executions).toEqual([
      { filePath: 'My Suite', suite: 'My Suite', title: 'spaced title', status: 'pass', attempt: 1, startedAt: NOW, durationMs: 250 },
    ]);
  });

  it('names a nameless test case "(unnamed)"', () => {
    expect(parseOk(suiteXml('<testcase classname="a.B"/>')).executions[0]).toMatchObject({
      title: '(unnamed)',
      suite: 'a.B',
      filePath: 'a/B',
    });
  });

  it('inherits the file attribute from the nearest enclosing suite', () => {
    const xml = `<testsuites>
  <testsuite name="outer" file="spec/outer.spec.ts" timestamp="2024-05-06T07:08:09Z">
    <testsuite name="inner">
      <testcase name="t1" classname="x.Y"/>
      <testcase name="t2" file="spec/own.spec.ts"/>
    </testsuite>
    <testsuite name="other" file="spec/other.spec.ts" timestamp="2024-05-06T07:08:10+02:00">
      <testcase name="t3"/>
    </testsuite>
    <testcase name="t4"/>
  </testsuite>
</testsuites>`;
    const r = parseOk(xml);
    expect(r.executions.map((e) => [e.title, e.filePath, e.suite, e.startedAt])).toEqual([
      ['t1', 'spec/outer.spec.ts', 'x.Y', Date.UTC(2024, 4, 6, 7, 8, 9)],
      ['t2', 'spec/own.spec.ts', 'inner', Date.UTC(2024, 4, 6, 7, 8, 9)],
      ['t3', 'spec/other.spec.ts', 'other', Date.UTC(2024, 4, 6, 5, 8, 10)],
      ['t4', 'spec/outer.spec.ts', 'outer', Date.UTC(2024, 4, 6, 7, 8, 9)],
    ]);
    expect(r.startedAt).toBe(Date.UTC(2024, 4, 6, 5, 8, 10));
  });

  it('turns unusable time values into 0', () => {
    const r = parseOk(
      suiteXml(
        ['abc', '-1', '', 'NaN', '1e400', '0.0004', '1.2345'].map((t, i) => `<testcase name="t${i}" time="${t}"/>`).join('\n') +
          '<testcase name="none"/>',
      ),
    );
    expect(r.executions.map((e) => e.durationMs)).toEqual([0, 0, 0, 0, 0, 0, 1235, 0]);
  });

  it('reads a time or timestamp the store cannot hold as unusable (0 / the fallback), not as the number', () => {
    // UInt32 ms is the duration column: 4294967.295 s fits, a thousandth more does not.
    const r = parseOk(
      suiteXml(
        ['4294967.295', '4294967.296', '1e300', '1967986371'].map((t, i) => `<testcase name="t${i}" time="${t}"/>`).join('\n') +
          '<testcase name="late" timestamp="2100-01-01T00:00:00Z"/><testcase name="ok" timestamp="2099-12-31T23:59:59Z"/>',
      ),
    );
    expect(r.executions.map((e) => e.durationMs)).toEqual([4_294_967_295, 0, 0, 0, 0, 0]);
    expect(r.executions[4]!.startedAt).toBe(NOW);
    expect(r.executions[5]!.startedAt).toBe(Date.parse('2099-12-31T23:59:59Z'));
  });

  it('repeated test case: attempts 1..n, retryOfIndex, and a pass after a fail is flaky', () => {
    const xml = suiteXml(`
      <testcase classname="a.B" name="flips" time="1"><failure message="boom 1"/></testcase>
      <testcase classname="a.B" name="steady" time="1"/>
      <testcase classname="a.B" name="flips" time="2"><error message="boom 2"/></testcase>
      <testcase classname="a.B" name="flips" time="3"/>`);
    const r = parseOk(xml);
    expect(r.executions.map((e) => [e.title, e.status, e.attempt, e.retryOfIndex])).toEqual([
      ['flips', 'fail', 1, undefined],
      ['steady', 'pass', 1, undefined],
      ['flips', 'fail', 2, 0],
      ['flips', 'flaky', 3, 0],
    ]);
    expect(r.runStatus).toBe('passed');
  });

  it('repeated passes stay passes', () => {
    const r = parseOk(suiteXml('<testcase name="t"/><testcase name="t"/>'));
    expect(r.executions.map((e) => [e.status, e.attempt, e.retryOfIndex])).toEqual([
      ['pass', 1, undefined],
      ['pass', 2, 0],
    ]);
  });

  it('rerunFailure/rerunError on a failing case add failed attempts after the primary one', () => {
    const xml = suiteXml(`
      <testcase classname="com.x.T" name="unstable" time="0.5">
        <failure message="first" type="java.lang.AssertionError">trace 1</failure>
        <rerunFailure message="second" type="java.lang.AssertionError">
          <stackTrace>trace 2</stackTrace>
          <system-out>[[ATTACHMENT|/tmp/rerun-1.webm]]</system-out>
        </rerunFailure>
        <rerunError type="java.lang.IllegalStateException"><stackTrace>
          java.lang.IllegalStateException: third
            at com.x.T.unstable(T.java:3)
        </stackTrace></rerunError>
      </testcase>`);
    const r = parseOk(xml);
    expect(r.executions).toEqual([
      {
        filePath: 'com/x/T',
        suite: 'com.x.T',
        title: 'unstable',
        status: 'fail',
        attempt: 1,
        startedAt: NOW,
        durationMs: 500,
        error: { type: 'java.lang.AssertionError', message: 'first', stack: 'trace 1' },
      },
      {
        filePath: 'com/x/T',
        suite: 'com.x.T',
        title: 'unstable',
        status: 'fail',
        attempt: 2,
        retryOfIndex: 0,
        startedAt: NOW,
        durationMs: 500,
        error: { type: 'java.lang.AssertionError', message: 'second', stack: 'trace 2' },
        artifacts: [{ name: 'rerun-1.webm', contentType: 'video/webm', path: '/tmp/rerun-1.webm' }],
      },
      {
        filePath: 'com/x/T',
        suite: 'com.x.T',
        title: 'unstable',
        status: 'fail',
        attempt: 3,
        retryOfIndex: 0,
        startedAt: NOW,
        durationMs: 500,
        error: {
          type: 'java.lang.IllegalStateException',
          message: 'java.lang.IllegalStateException: third',
          stack: 'java.lang.IllegalStateException: third\n            at com.x.T.unstable(T.java:3)',
        },
      },
    ]);
    expect(r.runStatus).toBe('failed');
  });

  it('flakyError with its own text and no message falls back to the first text line', () => {
    const r = parseOk(suiteXml('<testcase name="t"><flakyError type="E">\n\n  oops\n  more</flakyError></testcase>'));
    expect(r.executions.map((e) => e.status)).toEqual(['fail', 'flaky']);
    expect(r.executions[0]!.error).toEqual({ type: 'E', message: 'oops', stack: 'oops\n  more' });
  });

  it('an error with neither message nor text uses the type, then "failed"', () => {
    const r = parseOk(suiteXml('<testcase name="a"><failure type="Boom"/></testcase><testcase name="b"><error/></testcase>'));
    expect(r.executions.map((e) => e.error)).toEqual([{ type: 'Boom', message: 'Boom' }, { message: 'failed' }]);
  });

  it('skip signals: <skipped/>, status="notrun"/"skipped"/"disabled"', () => {
    const r = parseOk(
      suiteXml(`
        <testcase name="a"><skipped message="later"/></testcase>
        <testcase name="b" status="notrun"/>
        <testcase name="c" status="Skipped"/>
        <testcase name="d" status="disabled"/>
        <testcase name="e" status="run"/>`),
    );
    expect(r.executions.map((e) => e.status)).toEqual(['skip', 'skip', 'skip', 'skip', 'pass']);
    expect(r.runStatus).toBe('passed');
  });

  it('extracts [[ATTACHMENT|path]] from system-out/system-err and ignores the rest of the output', () => {
    const r = parseOk(
      suiteXml(`
        <testcase name="shot" classname="ui.Login">
          <failure message="no button"/>
          <system-out>log line
[[ATTACHMENT|/tmp/shot.png]]
more log</system-out>
          <system-err><![CDATA[[[ATTACHMENT|C:\\out\\trace.zip]] [[ATTACHMENT|/tmp/report.HTML]] [[ATTACHMENT|/tmp/notes]]]]></system-err>
        </testcase>`),
    );
    const e = r.executions[0]!;
    expect(e.artifacts).toEqual([
      { name: 'shot.png', contentType: 'image/png', path: '/tmp/shot.png' },
      { name: 'trace.zip', contentType: 'application/zip', path: 'C:\\out\\trace.zip' },
      { name: 'report.HTML', contentType: 'text/html', path: '/tmp/report.HTML' },
      { name: 'notes', contentType: 'text/plain', path: '/tmp/notes' },
    ]);
    expect(e.error).toEqual({ message: 'no button' });
  });

  it('copies test case properties into attributes, capped at 50', () => {
    const props = Array.from({ length: 60 }, (_, i) => `<property name="p${i}" value=" v${i} "/>`).join('');
    const r = parseOk(suiteXml(`<properties><property name="suite-level" value="x"/></properties><testcase name="t"><properties>${props}</properties></testcase>`));
    const attributes = r.executions[0]!.attributes!;
    expect(Object.keys(attributes)).toHaveLength(50);
    expect(attributes['p0']).toBe('v0');
    expect(attributes['p49']).toBe('v49');
    expect(attributes['p50']).toBeUndefined();
    expect(attributes['suite-level']).toBeUndefined();
  });

  it('caps the error message at 4,000 and the stack at 32,000 characters', () => {
    const longMessage = 'm'.repeat(5_000);
    const longStack = `${'s'.repeat(40_000)}\n`.repeat(3);
    const r = parseOk(suiteXml(`<testcase name="t"><failure message="${longMessage}">${longStack}</failure></testcase>`));
    const err = r.executions[0]!.error!;
    expect(err.message).toHaveLength(4_000);
    expect(err.stack).toHaveLength(32_000);
  });

  it('keeps attribute values longer than sax\'s default 64 KiB buffer', () => {
    const r = parseOk(suiteXml(`<testcase name="t"><failure message="${'x'.repeat(70_000)}"/></testcase>`));
    expect(r.executions[0]!.error!.message).toHaveLength(4_000);
  });

  it('uses now when no timestamp is known, and spans the run over start + duration', () => {
    const r = parseOk(suiteXml('<testcase name="a" time="2"/><testcase name="b" time="0.5"/>', 'name="s" timestamp="garbage"'));
    expect(r.executions.map((e) => e.startedAt)).toEqual([NOW, NOW]);
    expect([r.startedAt, r.finishedAt]).toEqual([NOW, NOW + 2000]);
  });

  it('returns empty_report for suites without test cases', () => {
    expect(parseJUnit('<testsuites><testsuite name="a"><properties/></testsuite></testsuites>', { now: NOW })).toEqual({
      ok: false,
      error: 'empty_report',
      message: 'no <testcase> element found',
    });
  });
});
