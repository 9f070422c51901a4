// The runner matrix, Playwright Test's version (1.65): as test/e2e/runner-matrix.test.ts does for
// Vitest (the table, the sample projects and the tests: test/helpers/runner-matrix.ts).
import { runnerMatrix } from '../helpers/runner-matrix.js';

runnerMatrix('playwright');
