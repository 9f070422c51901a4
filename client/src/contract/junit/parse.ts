// JUnit XML -> canonical executions (docs/contract.md §3). Pure and synchronous: a streaming sax
// pass that keeps only the state of the current suite chain and test case.
import sax from 'sax';
import type { SAXOptions, Tag } from 'sax';
import { deriveRunStatus } from '../batch.js';
import { canonicalText } from '../identity.js';
import { junitTestNames } from '../junit-names.js';
import type { ArtifactRef, ExecutionError, ExecutionInput, RunStatus, TestStatus } from '../batch.js';
import {
  MAX_MESSAGE_CHARS,
  MAX_PROPERTIES,
  MAX_PROPERTY_CHARS,
  MAX_STACK_CHARS,
  TextBuffer,
  addArtifact,
  clip,
  extractAttachments,
  firstNonEmptyLine,
  impossibleJUnitTimestamp,
  parseJUnitTimestamp,
  secondsToMs,
} from './helpers.js';

export type JUnitParseResult =
  | { ok: true; executions: ExecutionInput[]; runStatus: RunStatus; startedAt: number; finishedAt: number }
  | { ok: false; error: 'invalid_junit_xml' | 'empty_report' | 'too_many_testcases' | 'invalid_value'; message: string };

/** `status` attribute values (gtest, CTest, xunit-style reporters) that mean the test did not run. */
const SKIP_STATUSES = new Set(['notrun', 'skipped', 'disabled', 'ignored']);
const RETRY_ELEMENTS = new Set(['flakyFailure', 'flakyError', 'rerunFailure', 'rerunError']);
// Text we keep for an error: the stack cap plus slack for trailing whitespace trimmed later.
const ERROR_TEXT_LIMIT = MAX_STACK_CHARS + 1_024;
// sax refuses attribute values and flushes text past this many chars; real surefire messages can
// exceed sax's 64 KiB default, and our input is already capped by the body limit.
const SAX_BUFFER_LENGTH = 32 * 1024 * 1024;

interface SuiteFrame {
  name: string;
  file: string;
  timestamp: number | undefined;
}

/** A `<failure>`/`<error>` or a surefire retry element. */
interface FailureInfo {
  type: string;
  message: string;
  text: TextBuffer;
  stackTrace: TextBuffer | undefined;
  output: TextBuffer | undefined;
}

interface CaseState {
  attrs: Record<string, string>;
  /** The classname attribute, undefined when absent (present and empty is an empty suite for some producers). */
  classname: string | undefined;
  suite: SuiteFrame | undefined;
  failures: FailureInfo[];
  retries: FailureInfo[];
  skipped: boolean;
  output: TextBuffer | undefined;
  properties: Map<string, string>;
  /** `<property name="attachment" value="path">` (the junit4 "complete" schema convention). */
  attachments: string[];
}

type Role = 'suite' | 'testcase' | 'failure' | 'retry' | 'stackTrace' | 'output' | 'properties' | 'property' | 'other';

interface Frame {
  role: Role;
  /** Where text inside this element goes; undefined = ignored. */
  sink: TextBuffer | undefined;
  property?: { name: string; value: string | undefined; text: TextBuffer };
}

interface Attempt {
  status: TestStatus;
  error?: ExecutionError;
  output?: TextBuffer;
  /** The attempt the testcase element itself reports (not a surefire retry child). */
  own?: boolean;
}

interface RetryGroup {
  first: number;
  count: number;
  last: number;
  /** Whether any attempt before `last` failed. */
  failedBefore: boolean;
}

/** Thrown from sax callbacks to stop the parse; carries the client-facing result. */
class Abort extends Error {
  constructor(readonly result: Extract<JUnitParseResult, { ok: false }>) {
    super(result.message);
  }
}

function invalid(message: string): Abort {
  return new Abort({ ok: false, error: 'invalid_junit_xml', message });
}

function attr(tag: Tag, name: string): string {
  return (tag.attributes[name] ?? '').trim();
}

/** A `<failure>`/`<error>` or a surefire rerun/flaky element: its attributes, its text to come. */
function failureInfo(tag: Tag): FailureInfo {
  return { type: attr(tag, 'type'), message: attr(tag, 'message'), text: new TextBuffer(ERROR_TEXT_LIMIT), stackTrace: undefined, output: undefined };
}

function toError(info: FailureInfo): ExecutionError {
  const stackTrace = info.stackTrace?.text() ?? '';
  const text = stackTrace !== '' ? stackTrace : info.text.text();
  const message = info.message || firstNonEmptyLine(text) || info.type || 'failed';
  const error: ExecutionError = { message: clip(message, MAX_MESSAGE_CHARS) };
  if (info.type !== '') error.type = info.type;
  if (text !== '') error.stack = clip(text, MAX_STACK_CHARS);
  return error;
}

/** Several `<failure>` children: the first is the error, the others' text is appended to its stack. */
function primaryError(failures: FailureInfo[]): ExecutionError {
  const [first, ...rest] = failures as [FailureInfo, ...FailureInfo[]];
  const error = toError(first);
  if (rest.length > 0) {
    const extra = rest.map((f) => toError(f)).map((e) => e.stack ?? e.message);
    error.stack = clip([error.stack ?? error.message, ...extra].join('\n\n'), MAX_STACK_CHARS);
  }
  return error;
}

function caseAttempts(tc: CaseState): Attempt[] {
  const status = tc.attrs['status']?.toLowerCase() ?? '';
  const own = { output: tc.output, own: true };
  // An explicit "did not run" verdict from the runner wins over leftover failure text.
  if (SKIP_STATUSES.has(status)) return [{ status: 'skip', ...own }];
  const retries: Attempt[] = tc.retries.map((r) => ({ status: 'fail', error: toError(r), output: r.output }));
  if (tc.failures.length > 0) return [{ status: 'fail', error: primaryError(tc.failures), ...own }, ...retries];
  if (tc.skipped) return [{ status: 'skip', ...own }];
  if (retries.length > 0) return [...retries, { status: 'flaky', ...own }];
  return [{ status: 'pass', ...own }];
}

/**
 * `maxExecutions`: the parse stops as soon as the report has more executions than that (retries
 * included), so an oversized report costs no more memory than the limit.
 */
export function parseJUnit(xml: string, opts: { now: number; maxExecutions?: number }): JUnitParseResult {
  const maxExecutions = opts.maxExecutions ?? Number.POSITIVE_INFINITY;
  const executions: ExecutionInput[] = [];
  const groups = new Map<string, RetryGroup>();
  const suites: SuiteFrame[] = [];
  const frames: Frame[] = [];
  let testcase: CaseState | undefined;
  let sawRoot = false;
  /** The root <testsuites name> (Vitest's `vitest tests`, jest-junit's `jest tests`). */
  let reportName = '';

  const finishCase = (tc: CaseState): void => {
    const suiteFrame = tc.suite;
    // File, suite and title as the producer meant them (Vitest, jest-junit, …: client/src/contract/junit-names.ts).
    const { filePath, suite, title, params } = junitTestNames({
      reportName,
      suiteName: suiteFrame?.name ?? '',
      suiteFile: suiteFrame?.file ?? '',
      classname: tc.classname,
      name: tc.attrs['name'] ?? '',
      file: tc.attrs['file'] || undefined,
    });
    const startedAt = parseJUnitTimestamp(tc.attrs['timestamp']) ?? suiteFrame?.timestamp ?? opts.now;
    const durationMs = secondsToMs(tc.attrs['time']);
    let attributes: Record<string, string> | undefined;
    if (tc.properties.size > 0) attributes = Object.fromEntries(tc.properties);

    // NFC like the identity (storable.ts), so one test written in two Unicode forms is one retry group.
    const key = `${canonicalText(filePath)}\u0000${canonicalText(suite)}\u0000${canonicalText(title)}\u0000${params?.id ?? ''}`;
    let group = groups.get(key);
    for (const attempt of caseAttempts(tc)) {
      const index = executions.length;
      const execution: ExecutionInput = { filePath, suite, title, status: attempt.status, attempt: 1, startedAt, durationMs };
      if (params) execution.params = { ...params };
      if (group === undefined) {
        group = { first: index, count: 1, last: index, failedBefore: false };
        groups.set(key, group);
      } else {
        group.failedBefore ||= executions[group.last]?.status === 'fail';
        group.count += 1;
        group.last = index;
        execution.attempt = group.count;
        execution.retryOfIndex = group.first;
      }
      if (attempt.error) execution.error = attempt.error;
      const artifacts: ArtifactRef[] = [];
      if (attempt.output) extractAttachments(attempt.output.text(), artifacts);
      if (attempt.own) for (const p of tc.attachments) addArtifact(p, artifacts);
      if (artifacts.length > 0) execution.artifacts = artifacts;
      if (attributes) execution.attributes = { ...attributes };
      executions.push(execution);
      if (executions.length > maxExecutions) {
        throw new Abort({ ok: false, error: 'too_many_testcases', message: `the report has more than ${maxExecutions} test executions (retries included)` });
      }
    }
  };

  /** A timestamp naming a date that does not exist refuses the report (a value, not the XML, is wrong). */
  const checkTimestamp = (tag: Tag): void => {
    const value = tag.attributes['timestamp'];
    const impossible = impossibleJUnitTimestamp(value);
    if (impossible === undefined) return;
    const name = tag.attributes['name'] ?? '';
    throw new Abort({
      ok: false,
      error: 'invalid_value',
      message: `<${tag.name}${name === '' ? '' : ` name="${clip(name, 200)}"`}> timestamp "${clip(value ?? '', 100)}" is not a calendar date: ${impossible} ${position()}`,
    });
  };

  const openTag = (tag: Tag): void => {
    const name = tag.name;
    if (name === 'testsuite' || name === 'testsuites' || name === 'testcase') checkTimestamp(tag);
    const parent = frames[frames.length - 1];
    if (parent === undefined) {
      // sax accepts a second top-level element; XML (and so concatenated reports) does not.
      if (sawRoot) throw invalid(`Multiple root elements ${position()}`);
      sawRoot = true;
      if (name === 'testsuites') reportName = attr(tag, 'name');
      if (name !== 'testsuites' && name !== 'testsuite') {
        throw invalid(`root element <${name}> is not <testsuites> or <testsuite>`);
      }
    }

    if (testcase === undefined) {
      if (name === 'testsuite' || name === 'testsuites') {
        // Nested suites inherit what they do not set themselves; <testsuites> only contributes a timestamp.
        const outer = suites[suites.length - 1];
        const own = name === 'testsuite';
        suites.push({
          name: (own && attr(tag, 'name')) || outer?.name || '',
          file: (own && attr(tag, 'file')) || outer?.file || '',
          timestamp: parseJUnitTimestamp(tag.attributes['timestamp']) ?? outer?.timestamp,
        });
        frames.push({ role: 'suite', sink: undefined });
        return;
      }
      if (name === 'testcase') {
        const attrs: Record<string, string> = {};
        for (const k of ['name', 'classname', 'file', 'time', 'timestamp', 'status']) attrs[k] = attr(tag, k);
        testcase = {
          attrs,
          classname: tag.attributes['classname']?.trim(),
          suite: suites[suites.length - 1],
          failures: [],
          retries: [],
          skipped: false,
          output: undefined,
          properties: new Map(),
          attachments: [],
        };
        frames.push({ role: 'testcase', sink: undefined });
        return;
      }
      frames.push({ role: 'other', sink: undefined });
      return;
    }

    const tc = testcase;
    const retry = parent?.role === 'retry' ? tc.retries[tc.retries.length - 1] : undefined;
    if (parent?.role === 'testcase') {
      if (name === 'failure' || name === 'error') {
        const info = failureInfo(tag);
        tc.failures.push(info);
        frames.push({ role: 'failure', sink: info.text });
        return;
      }
      if (RETRY_ELEMENTS.has(name)) {
        const info = failureInfo(tag);
        tc.retries.push(info);
        frames.push({ role: 'retry', sink: info.text });
        return;
      }
      if (name === 'skipped') {
        tc.skipped = true;
        frames.push({ role: 'other', sink: undefined });
        return;
      }
      if (name === 'system-out' || name === 'system-err') {
        tc.output ??= new TextBuffer();
        frames.push({ role: 'output', sink: tc.output });
        return;
      }
      if (name === 'properties') {
        frames.push({ role: 'properties', sink: undefined });
        return;
      }
    } else if (retry !== undefined) {
      if (name === 'stackTrace') {
        retry.stackTrace ??= new TextBuffer(ERROR_TEXT_LIMIT);
        frames.push({ role: 'stackTrace', sink: retry.stackTrace });
        return;
      }
      if (name === 'system-out' || name === 'system-err') {
        retry.output ??= new TextBuffer();
        frames.push({ role: 'output', sink: retry.output });
        return;
      }
    } else if (parent?.role === 'properties' && name === 'property') {
      const value = tag.attributes['value'];
      const text = new TextBuffer(MAX_PROPERTY_CHARS + 1_024);
      frames.push({
        role: 'property',
        sink: value === undefined ? text : undefined,
        property: { name: attr(tag, 'name'), value: value?.trim(), text },
      });
      return;
    }
    // Unknown markup inside a failure/stack/output is part of its text content; elsewhere it is ignored.
    const inheritsText = parent?.role === 'failure' || parent?.role === 'stackTrace' || parent?.role === 'output';
    frames.push({ role: 'other', sink: inheritsText ? parent.sink : undefined });
  };

  const closeTag = (): void => {
    const frame = frames.pop();
    if (frame === undefined) return;
    if (frame.role === 'suite') {
      suites.pop();
    } else if (frame.role === 'testcase' && testcase !== undefined) {
      finishCase(testcase);
      testcase = undefined;
    } else if (frame.role === 'property' && frame.property && testcase !== undefined) {
      const { name, value, text } = frame.property;
      const props = testcase.properties;
      const propValue = clip(value ?? text.text(), MAX_PROPERTY_CHARS);
      if (name !== '' && (props.has(name) || props.size < MAX_PROPERTIES)) props.set(name, propValue);
      if (name === 'attachment') testcase.attachments.push(propValue);
    }
  };

  const onText = (text: string): void => {
    frames[frames.length - 1]?.sink?.add(text);
  };

  // strictEntities: only the five XML entities exist, so `&nbsp;` and friends are errors.
  const options: SAXOptions & { strictEntities: boolean } = { position: true, strictEntities: true };
  const parser = sax.parser(true, options);
  parser.ondoctype = () => {
    throw invalid('DOCTYPE is not allowed');
  };
  // sax lines are 0-based; its column already counts the offending character.
  const position = (): string => `at line ${parser.line + 1}, column ${Math.max(parser.column, 1)}`;
  parser.onerror = (err: Error) => {
    const reason = (err.message.split('\n', 1)[0] ?? '').replace(/\.$/, '') || 'XML parse error';
    throw invalid(`${reason} ${position()}`);
  };
  parser.onopentag = (tag) => openTag(tag as Tag);
  parser.onclosetag = closeTag;
  parser.ontext = onText;
  parser.oncdata = onText;

  const saxLimits = sax as unknown as { MAX_BUFFER_LENGTH: number };
  const previousLimit = saxLimits.MAX_BUFFER_LENGTH;
  // The parse is synchronous, so raising the module-wide limit cannot affect another parser.
  saxLimits.MAX_BUFFER_LENGTH = SAX_BUFFER_LENGTH;
  try {
    // A BOM is not markup; strict sax would call it text before the root.
    parser.write(xml.charCodeAt(0) === 0xfeff ? xml.slice(1) : xml).close();
  } catch (err) {
    if (err instanceof Abort) return err.result;
    throw err;
  } finally {
    saxLimits.MAX_BUFFER_LENGTH = previousLimit;
  }
  if (!sawRoot) return { ok: false, error: 'invalid_junit_xml', message: 'document has no root element' };

  for (const group of groups.values()) {
    const last = executions[group.last];
    // A pass after a failed attempt of the same test is the flakiness signal.
    if (group.count > 1 && group.failedBefore && last?.status === 'pass') last.status = 'flaky';
  }
  if (executions.length === 0) return { ok: false, error: 'empty_report', message: 'no <testcase> element found' };

  const finals = [...groups.values()].map((g) => executions[g.last]).filter((e) => e !== undefined);
  let startedAt = Number.POSITIVE_INFINITY;
  let finishedAt = Number.NEGATIVE_INFINITY;
  for (const e of executions) {
    startedAt = Math.min(startedAt, e.startedAt);
    finishedAt = Math.max(finishedAt, e.startedAt + e.durationMs);
  }
  return { ok: true, executions, runStatus: deriveRunStatus(finals), startedAt, finishedAt };
}
