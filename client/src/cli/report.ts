// `flakehouse report <files or globs…>`: JUnit XML reports → one run → Flakehouse. Exits 0 unless
// --strict, whatever happens to the delivery, so a reporting problem never fails a CI job.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { expandReportPatterns } from '../reporter/expand-patterns.js';
import { junitFilesToRun } from '../reporter/junit-to-run.js';
import { ReportDeliveryError, sendRun } from '../reporter/send.js';
import { attachMatchingFiles } from '../reporter/artifacts.js';
import type { CliIo } from './io.js';
import { UsageError } from './usage-error.js';

export const REPORT_USAGE = 'usage: flakehouse report [--strict] [--root DIR] [--json] [--attach GLOB]… <files, directories or globs…>';

export async function report(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: { strict: { type: 'boolean' }, root: { type: 'string' }, json: { type: 'boolean' }, attach: { type: 'string', multiple: true } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(`${err instanceof Error ? err.message : String(err)}\n${REPORT_USAGE}`);
  }
  const { values, positionals } = parsed;
  if (positionals.length === 0) throw new UsageError(`report: name at least one JUnit XML file, directory or glob\n${REPORT_USAGE}`);
  const strict = values.strict === true;
  const log = (line: string): void => void io.stderr.write(`flakehouse: ${line}\n`);
  const rootDir = path.resolve(cwd, values.root ?? '.');

  const { files, unmatched } = expandReportPatterns(positionals, cwd);
  for (const p of unmatched) log(`warning: ${JSON.stringify(p)} matched no file`);
  const { run, files: reports } = junitFilesToRun(files, { cwd, now: Date.now(), rootDir });
  for (const r of reports) {
    if (r.problem !== undefined) log(`skipped ${r.file}: ${r.problem}`);
  }
  if (run === undefined) {
    const why = files.length === 0 ? 'no JUnit XML report was found' : `none of the ${files.length} report(s) had a test case`;
    log(`warning: nothing to send: ${why}`);
    if (values.json) io.stdout.write(`${JSON.stringify({ delivered: false, files: reports })}\n`);
    return strict ? 1 : 0;
  }
  const used = reports.filter((r) => r.problem === undefined).length;
  if (values.attach) attachMatchingFiles(run.executions, values.attach, { cwd, warn: (line) => log(`warning: ${line}`) });
  log(`read ${run.executions.length} executions from ${used} report(s)`);

  try {
    const result = await sendRun(run, { env, cwd, strict, log });
    if (values.json) io.stdout.write(`${JSON.stringify({ ...result, files: reports })}\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof ReportDeliveryError)) throw err;
    if (values.json) io.stdout.write(`${JSON.stringify({ ...err.result, files: reports })}\n`);
    // The warning is already logged by sendRun; the exit code carries --strict's verdict.
    return err.config ? 2 : 1;
  }
}
