// pytest's JUnit reports (client/src/contract/junit-names.ts), on reports pytest 9.0.3 wrote for the sample
// project test/fixtures/runners/pytest-sample/ (test/fixtures/junit/pytest/): file = the module's
// path, suite = its classes joined with "::", title = the function, its parametrization id the
// params' `id` — as pytest's node id names the test and as the OTLP pytest reading does
// (receivers/otlp/conventions.ts parseNodeId); the same whether the report has xunit1's `file`
// attribute or only xunit2's dotted classname.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { junitTestNames, splitPytestClassname } from '../../client/src/contract/junit-names.js';
import { parseJUnit } from '../../client/src/contract/junit/parse.js';
import { parseNodeId } from '../../src/receivers/otlp/conventions.js';

const FIXTURES = path.join(import.meta.dirname, '../fixtures/junit');

function read(file: string) {
  const parsed = parseJUnit(readFileSync(path.join(FIXTURES, file), 'utf8'), { now: Date.parse('2026-11-29T00:00:00Z') });
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.executions;
}

/** [file, suite, title (with the parametrization id, as pytest writes it), status] of each execution, in the report's order. */
function names(file: string): [string, string, string, string][] {
  return read(file).map((e) => [e.filePath, e.suite, typeof e.params?.['id'] === 'string' ? `${e.title}[${e.params['id']}]` : e.title, e.status]);
}

/** The sample's tests in the order pytest ran them, named as pytest's node ids name them. */
const SAMPLE: [string, string, string, string][] = [
  ['tests/geometry/vector_test.py', 'TestVector', 'test_has_a_length', 'pass'],
  ['tests/test_math.py', '', 'test_adds', 'pass'],
  ['tests/test_math.py', '', 'test_handles_imaginary_numbers', 'skip'],
  ['tests/test_math.py', 'TestDivision', 'test_divides[2-1]', 'pass'],
  ['tests/test_math.py', 'TestDivision', 'test_divides[9-3]', 'pass'],
  ['tests/test_math.py', 'TestDivision', 'test_divides[7.5-2.5]', 'pass'],
  ['tests/test_math.py', 'TestDivision', 'test_refuses_zero', 'pass'],
  ['tests/test_math.py', 'TestDivision::TestRounding', 'test_rounds_half_to_even', 'fail'],
];

describe('pytest --junitxml', () => {
  it('xunit2 (pytest’s default, no file attribute): file, classes and title from the dotted classname and the name', () => {
    expect(names('pytest/pytest-9.0.3-xunit2.xml')).toEqual(SAMPLE);
  });

  it('xunit1 (`-o junit_family=xunit1`): the file attribute, the classes after the module', () => {
    expect(names('pytest/pytest-9.0.3-xunit1.xml')).toEqual(SAMPLE);
  });

  it('xunit1 and xunit2 give every test the same identity (the parametrization id in params)', () => {
    const key = (f: string) => read(f).map((e) => JSON.stringify([e.filePath, e.suite, e.title, e.params ?? null]));
    expect(key('pytest/pytest-9.0.3-xunit1.xml')).toEqual(key('pytest/pytest-9.0.3-xunit2.xml'));
    expect(read('pytest/pytest-9.0.3-xunit2.xml').filter((e) => e.params !== undefined).map((e) => [e.title, e.params])).toEqual([
      ['test_divides', { id: '2-1' }],
      ['test_divides', { id: '9-3' }],
      ['test_divides', { id: '7.5-2.5' }],
    ]);
  });

  it('names each test as the OTLP pytest reading names it from the node id: one test whatever the path', () => {
    const nodeIds = [
      'tests/geometry/vector_test.py::TestVector::test_has_a_length',
      'tests/test_math.py::test_adds',
      'tests/test_math.py::test_handles_imaginary_numbers',
      'tests/test_math.py::TestDivision::test_divides[2-1]',
      'tests/test_math.py::TestDivision::test_divides[9-3]',
      'tests/test_math.py::TestDivision::test_divides[7.5-2.5]',
      'tests/test_math.py::TestDivision::test_refuses_zero',
      'tests/test_math.py::TestDivision::TestRounding::test_rounds_half_to_even',
    ];
    for (const f of ['pytest/pytest-9.0.3-xunit1.xml', 'pytest/pytest-9.0.3-xunit2.xml']) {
      const fromJUnit = read(f).map((e) => ({ filePath: e.filePath, suite: e.suite, title: e.title, ...(e.params ? { params: e.params } : {}) }));
      expect(fromJUnit, f).toEqual(nodeIds.map(parseNodeId));
    }
  });

  it('dorny’s pytest report (<testsuites name="pytest tests">): module-level tests of tests/test_lib.py', () => {
    const got = names('dorny/python-xunit-pytest.xml').map(([f, s, t]) => [f, s, t]);
    expect(got).toContainEqual(['tests/test_lib.py', '', 'test_always_pass']);
    expect(got).toContainEqual(['tests/test_lib.py', '', 'test_parameterized[param1]']);
    expect(got).toContainEqual(['tests/test_lib.py', '', 'test_parameterized[param2]']);
    // record_xml_attribute('classname', …) replaced the classname: a module of that name is the best reading.
    expect(got).toContainEqual(['custom_classname.py', '', 'test_with_record_xml_attribute']);
    expect(got.filter(([f]) => f !== 'tests/test_lib.py')).toHaveLength(1);
  });

  it('older pytest (root <testsuites> without a name): recognised by <testsuite name="pytest">', () => {
    expect(names('mikepenz/python__report.xml').map(([f, s, t]) => [f, s, t])).toEqual([
      ['python/test_sample.py', '', 'test_which_succeeds'],
      ['python/test_sample.py', '', 'test_which_fails'],
      ['python/test_sample.py', '', 'test_with_error'],
    ]);
  });

  it('splits a classname at the module: file attribute, default module names, else the first class', () => {
    expect(splitPytestClassname('tests.test_math.TestDivision.TestRounding')).toEqual({ module: ['tests', 'test_math'], classes: ['TestDivision', 'TestRounding'] });
    expect(splitPytestClassname('tests.geometry.vector_test.TestVector')).toEqual({ module: ['tests', 'geometry', 'vector_test'], classes: ['TestVector'] });
    // A package named like a test module above the module: the last such part is the module.
    expect(splitPytestClassname('test_pkg.test_cart.TestCart')).toEqual({ module: ['test_pkg', 'test_cart'], classes: ['TestCart'] });
    // A module outside the defaults (python_files = check_*.py; doctests): up to the first class, else all.
    expect(splitPytestClassname('checks.check_cart.TestCart')).toEqual({ module: ['checks', 'check_cart'], classes: ['TestCart'] });
    expect(splitPytestClassname('src.cart')).toEqual({ module: ['src', 'cart'], classes: [] });
    // xunit1's file names the module, whatever it is called.
    expect(splitPytestClassname('checks.cart.TestCart', 'checks/cart.py')).toEqual({ module: ['checks', 'cart'], classes: ['TestCart'] });
    expect(splitPytestClassname('checks.cart.TestCart', 'checks\\cart.py')).toEqual({ module: ['checks', 'cart'], classes: ['TestCart'] });
  });

  it('only pytest’s reports: the same classname under another suite name reads as before', () => {
    const base = { reportName: '', suiteFile: '', file: undefined, classname: 'tests.test_cart.TestCart', name: 'test_adds[1]' };
    expect(junitTestNames({ ...base, suiteName: 'pytest' })).toEqual({ filePath: 'tests/test_cart.py', suite: 'TestCart', title: 'test_adds', params: { id: '1' } });
    expect(junitTestNames({ ...base, suiteName: 'custom', reportName: 'pytest tests' })).toEqual({ filePath: 'tests/test_cart.py', suite: 'TestCart', title: 'test_adds', params: { id: '1' } });
    expect(junitTestNames({ ...base, suiteName: 'com.acme' })).toEqual({ filePath: 'tests/test_cart/TestCart', suite: 'tests.test_cart.TestCart', title: 'test_adds[1]' });
    expect(junitTestNames({ ...base, suiteName: 'Surefire suite', classname: 'com.example.FooTest' })).toEqual({ filePath: 'com/example/FooTest', suite: 'com.example.FooTest', title: 'test_adds[1]' });
  });
});
