// The runner matrix, Vitest's versions (3.2, 4.1, 5.1): each installed from the npm registry at the
// exact version the README's "Supported runners" table names, in a scratch project that uses the
// client package as a user's does; a green suite exits 0 with the reporter and its run is stored
// whole, a failing suite exits 1 as it does without the reporter and is stored too. On Vitest 3.2
// the reporter used to throw `testCase.artifacts is not a function` once per test and Vitest exited
// 1 on a green suite. The table, the sample projects and the tests: test/helpers/runner-matrix.ts;
// Jest's and Playwright's versions: test/e2e/runner-matrix-jest.test.ts, -playwright.test.ts (a file
// per runner kind, so the suite's workers share the matrix).
import { runnerMatrix } from '../helpers/runner-matrix.js';

runnerMatrix('vitest');
