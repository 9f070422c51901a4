// Which test a JUnit <testcase> is: its file, suite and title, read the way the tool that wrote the
// report meant them, so a test sent through its runner's reporter (client/src/reporter/), through that
// runner's JUnit file or over OTLP is one test (the identity is file + suite + title + params,
// client/src/contract/identity.ts). JUnit has no standard for any of the three: each producer puts them in
// different attributes. The conventions read here, each from real reports
// (test/fixtures/junit/vitest/, test/fixtures/junit/jest/):
//   - Vitest (`--reporter=junit`): <testsuite name> and <testcase classname> are the file path
//     (relative to the Vitest root); <testcase name> is the describe blocks and the title joined
//     with " > ", as the reporter joins the suite. Read before: file `src/math/test/ts` (the
//     classname's dots made slashes, as for a Java class), suite `src/math.test.ts`.
//   - Playwright's `junit` reporter: the same, with " › " between the describe blocks and the
//     title, and the path relative to `testDir` (the reporter's is relative to the repository root:
//     they agree when `testDir` is the root).
//   - jest-junit with the options the README gives (`addFileAttribute`, classname `{classname}`,
//     title `{title}`, `ancestorSeparator: " > "`): <testcase file> is the path, classname the
//     describe blocks (empty for a test outside any), name the title. With jest-junit's defaults the
//     file is not in the report at all and the describe blocks are joined to the title by blanks,
//     so such a report cannot name the reporter's test; it stays as it was read before.
//   - pytest's `--junitxml` (test/fixtures/junit/pytest/; recognised by its <testsuite name="pytest">
//     or <testsuites name="pytest tests">): the classname is the module's dotted path, then the
//     test's classes (`tests.test_math.TestDivision.TestRounding`), the name the function with its
//     parametrization id (`test_divides[2-1]`). The module is the classname up to its last part
//     named as pytest collects test modules by default (`test_*`, `*_test`), else up to its first
//     capitalised part (a class); file = that module as a path with `.py` (what `junit_family=xunit1`
//     writes in `file`, which wins when present), suite = the classes joined with " > " ("" for a
//     module-level function), title = the name as written, id included (JUnit carries no params).
//     Read before: suite the classname, file its dots made slashes (`tests/test_math/TestDivision`).
//   - Everything else as before: a Java-style dotted classname is the suite, and with its dots made
//     slashes the file (when no `file` attribute or suite file says otherwise).

import { normalizeTestPath } from './identity.js';

export interface JUnitCaseNames {
  /** `name` of the report's root <testsuites> ('' when absent or the root is a <testsuite>). */
  reportName: string;
  /** `name` and `file` of the innermost enclosing <testsuite> (inherited from outer ones). */
  suiteName: string;
  suiteFile: string;
  /** The <testcase> attributes, trimmed; undefined when the attribute is absent. */
  classname: string | undefined;
  name: string;
  file: string | undefined;
}

export interface JUnitTestNames {
  filePath: string;
  suite: string;
  title: string;
  /** A pytest parametrization id (`test_divides[2-1]` → `{ id: '2-1' }`), as the OTLP pytest reading gives it. */
  params?: { id: string };
}

/** How Vitest joins a test's describe blocks and title in <testcase name> (and the reporters join the suite). */
const VITEST_SEPARATOR = ' > ';
/** How Playwright joins them in its JUnit <testcase name>. */
const PLAYWRIGHT_SEPARATOR = ' › ';
/** Vitest's default <testsuites name>. */
const VITEST_REPORT_NAME = 'vitest tests';

/** pytest's <testsuite name> (its `junit_suite_name` default) and <testsuites name> (pytest ≥ 7). */
const PYTEST_SUITE_NAME = 'pytest';
const PYTEST_REPORT_NAME = 'pytest tests';
/** A module pytest collects by default (`python_files = test_*.py *_test.py`), as a classname part. */
const PYTEST_MODULE_RE = /^test_|_test$/;

/** A JavaScript/TypeScript (or component) source file's name. */
const SOURCE_FILE_RE = /\.(?:[cm]?[jt]sx?|vue|svelte|astro)$/i;

/** A JavaScript/TypeScript source file, or any path with a directory: never a dotted class name. */
export function looksLikeFilePath(value: string): boolean {
  return SOURCE_FILE_RE.test(value) || /[\\/]/.test(value);
}

export function junitTestNames(c: JUnitCaseNames): JUnitTestNames {
  const title = c.name || '(unnamed)';
  const classname = c.classname ?? '';
  // Vitest, Playwright: the classname is the file (and the suite's name), the name carries the
  // describe blocks, joined as the reporters join the suite.
  if (classname !== '' && looksLikeFilePath(classname) && (classname === c.suiteName || c.reportName === VITEST_REPORT_NAME) && !c.file) {
    const separator = c.reportName !== VITEST_REPORT_NAME && title.includes(PLAYWRIGHT_SEPARATOR) ? PLAYWRIGHT_SEPARATOR : VITEST_SEPARATOR;
    const parts = title.split(separator);
    const own = parts.pop() || title;
    return { filePath: classname, suite: parts.join(VITEST_SEPARATOR), title: own };
  }
  // pytest: the classname is the module's dotted path, then the classes.
  if (classname !== '' && (c.suiteName === PYTEST_SUITE_NAME || c.reportName === PYTEST_REPORT_NAME) && !looksLikeFilePath(classname)) {
    // As pytest's node id, and as the OTLP pytest reading (receivers/otlp/conventions.ts parseNodeId)
    // names the test: classes joined by `::`, the parametrization id as params, so a test sent
    // through JUnit and through OTLP is one test.
    const { module, classes } = splitPytestClassname(classname, c.file);
    const open = title.indexOf('[');
    const parametrized = open > 0 && title.endsWith(']');
    const names: JUnitTestNames = { filePath: c.file || `${module.join('/')}.py`, suite: classes.join('::'), title: parametrized ? title.slice(0, open) : title };
    if (parametrized) names.params = { id: title.slice(open + 1, -1) };
    return names;
  }
  // A producer that names the file on the test case: its classname (present, even empty) is the suite.
  if (c.file) return { filePath: c.file, suite: c.classname ?? c.suiteName, title };
  const suite = classname || c.suiteName;
  const filePath = c.suiteFile || (classname ? (looksLikeFilePath(classname) ? classname : classname.replaceAll('.', '/')) : c.suiteName);
  return { filePath, suite, title };
}

/**
 * A pytest classname (`tests.test_math.TestDivision.TestRounding`) as its module's dotted path and
 * the classes: the module is the one `file` names (xunit1's attribute) when the classname starts with
 * it, else the parts up to the last one named as a default test module (`test_*`, `*_test`), else
 * those before the first capitalised one (a class; classes are `Test*` by default), else all of them.
 */
export function splitPytestClassname(classname: string, file?: string): { module: string[]; classes: string[] } {
  const parts = classname.split('.');
  let end = -1;
  if (file) {
    const fromFile = file.replace(/\.py$/i, '').split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
    if (fromFile.length > 0 && fromFile.length <= parts.length && fromFile.every((p, i) => p === parts[i])) end = fromFile.length;
  }
  if (end < 0) {
    for (let i = parts.length - 1; i >= 0 && end < 0; i--) if (PYTEST_MODULE_RE.test(parts[i]!)) end = i + 1;
  }
  if (end < 0) {
    const firstClass = parts.findIndex((p) => /^[A-Z]/.test(p));
    end = firstClass > 0 ? firstClass : parts.length;
  }
  return { module: parts.slice(0, end), classes: parts.slice(end) };
}

/** The file a classname names when its dots are read as a Java package's (the pre-fix reading of every classname). */
function dotted(classname: string): string {
  return classname.replaceAll('.', '/');
}

/**
 * The names the JUnit receiver gave, before this module existed (commit 7290b75), to the JUnit
 * testcase that `junitTestNames` now reads as `current`: the "legacy twins" a project that sent
 * JUnit before the fix has stored, each a second identity of the same test. The reading was
 * `suite = classname || suite name`, `file = file attribute || suite file || classname with its
 * dots made slashes`, `title = name`. Per producer:
 *   - Vitest: file `src/math/test/ts`, suite `src/math.test.ts`, title `math > division > divides`
 *     (now file `src/math.test.ts`, suite `math > division`, title `divides`);
 *   - Playwright: the same with ` › ` between the describe blocks and the title;
 *   - a classname that is a path (any other producer): file dotted, suite and title as now;
 *   - jest-junit with a file attribute, a test outside any describe block: suite the <testsuite>
 *     name, which jest-junit writes as the file's path (now: empty).
 * Only a test in a JavaScript/TypeScript source file can have one (those producers name such files;
 * a Java or Python class read as a path was read so before too), and never a test with params (JUnit
 * has none: the caller checks). The twins are candidates: the caller joins one only when it is stored. None equals
 * `current`.
 */
export function legacyJUnitTwins(current: Omit<JUnitTestNames, 'params'>): JUnitTestNames[] {
  const filePath = current.filePath.trim();
  const suite = current.suite.trim();
  const title = current.title.trim();
  if (title === '' || !SOURCE_FILE_RE.test(filePath)) return [];
  const out: JUnitTestNames[] = [];
  const add = (t: JUnitTestNames): void => {
    const same = (a: JUnitTestNames, b: JUnitTestNames): boolean =>
      a.filePath.toLowerCase() === b.filePath.toLowerCase() && a.suite === b.suite && a.title === b.title;
    if (!same(t, { filePath, suite, title }) && !out.some((o) => same(o, t))) out.push(t);
  };
  const file = dotted(filePath);
  if (suite === '') {
    add({ filePath: file, suite: filePath, title });
    add({ filePath, suite: filePath, title });
  } else {
    const blocks = suite.split(VITEST_SEPARATOR);
    add({ filePath: file, suite: filePath, title: [...blocks, title].join(VITEST_SEPARATOR) });
    add({ filePath: file, suite: filePath, title: [...blocks, title].join(PLAYWRIGHT_SEPARATOR) });
    if (suite === filePath) add({ filePath: file, suite: filePath, title });
  }
  return out;
}

/** Whether `legacy` is one of `current`'s legacy twins (file compared as identities compare it: case aside). */
export function isLegacyJUnitTwin(legacy: Omit<JUnitTestNames, 'params'>, current: Omit<JUnitTestNames, 'params'>): boolean {
  const file = normalizeTestPath(legacy.filePath);
  return legacyJUnitTwins(current).some((t) => normalizeTestPath(t.filePath) === file && t.suite === legacy.suite.trim() && t.title === legacy.title.trim());
}
