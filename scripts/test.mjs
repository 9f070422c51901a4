// `npm test`: lint and type-check (oxlint, with tsgolint's TypeScript program) and the suite
// (vitest run) at the same time. The suite leaves part of the two cores idle while its workers wait
// on the servers, processes and timers they start, and the check fills that time instead of running
// first on its own (docs/architecture.md, Testing, has the measurements). The check's report is
// printed after the suite's, in one piece. The exit code is the suite's if it failed, else the
// check's. Arguments go to vitest.
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
/** A package's own bin script (node_modules/.bin holds shell shims on Windows, not the script). */
const bin = (pkg) => {
  const dir = path.join(root, 'node_modules', pkg);
  return path.join(dir, JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).bin[pkg]);
};

/** Runs `command`; resolves with its exit code (1 when a signal ended it) and, if captured, its output. */
function run(command, args, capture) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    const chunks = [];
    if (capture) for (const stream of [child.stdout, child.stderr]) stream.on('data', (c) => chunks.push(c));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? 1, output: Buffer.concat(chunks).toString('utf8') }));
  });
}

const check = run(process.execPath, [bin('oxlint')], true);
const suite = run(process.execPath, [bin('vitest'), 'run', ...process.argv.slice(2)], false);
const [suiteResult, checkResult] = await Promise.all([suite, check]);
process.stdout.write(`\n== npm run check (oxlint: lint and type-check): ${checkResult.code === 0 ? 'passed' : `FAILED (exit ${checkResult.code})`}\n${checkResult.output}`);
process.exitCode = suiteResult.code || checkResult.code;
