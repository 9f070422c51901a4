// The runner matrix, Jest's versions (29.7, 30.5): as test/e2e/runner-matrix.test.ts does for Vitest
// (the table, the sample projects and the tests: test/helpers/runner-matrix.ts).
import { runnerMatrix } from '../helpers/runner-matrix.js';

runnerMatrix('jest');
