// `npm run bench -- suite [--target 120] [--top 15]`
//
// Where `npm test`'s time goes on this machine. Runs what `npm test` runs (scripts/test.mjs): the
// suite (`vitest run`) and the check (oxlint with tsgolint) at the same time, the suite with
// bench/suite/probe.ts, which reads each test file's CPU from /proc. While they run, the test
// workers' threads are sampled every second. Prints and writes bench/results/suite-latest.json:
// the wall time, the CPU of each part, how many of the cores the run kept busy, and how much CPU
// fits in `--target` seconds at that rate. Linux only (/proc).
//
// The totals are exact: each command runs under `sh`, which prints its own /proc stat after the
// command ends, and the children's CPU there includes every process the command waited for. The
// split of the test workers' CPU by thread is sampled, so it misses up to a second of each thread
// and the threads that lived less than a second: that remainder is reported as unattributed.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { parseArgs, stripVTControlCharacters } from 'node:util';
import { parseProcStat, readProcStat } from './proc-stat.js';
import { writeResult } from './results.js';

const ROOT = path.resolve(import.meta.dirname, '..');

/** A package's own bin script, as scripts/test.mjs finds it. */
function packageBin(pkg: string): string {
  const dir = path.join(ROOT, 'node_modules', pkg);
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  return path.join(dir, manifest.bin[pkg]!);
}

interface Finished {
  code: number;
  wallS: number;
  /** The command's whole CPU: its process and every process it waited for. */
  cpuS: number;
  output: string;
  pid: number;
}

/** Runs a command under sh, which reports the command's CPU (its children's, to sh) on fd 3. */
function runMeasured(command: string, args: string[], env: NodeJS.ProcessEnv): { pid: Promise<number>; done: Promise<Finished> } {
  const started = performance.now();
  const child = spawn('sh', ['-c', '"$@" & echo $! >&3; wait $!; code=$?; cat /proc/$$/stat >&3; exit $code', 'sh', command, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  });
  let report = '';
  const output: Buffer[] = [];
  for (const stream of [child.stdio[1], child.stdio[2]] as Readable[]) stream.on('data', (c: Buffer) => output.push(c));
  const fd3 = child.stdio[3] as Readable;
  const pid = new Promise<number>((resolve) => {
    fd3.on('data', (c: Buffer) => {
      report += c.toString('utf8');
      const m = /^(\d+)\n/.exec(report);
      if (m) resolve(Number(m[1]));
    });
  });
  const done = new Promise<Finished>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      const lines = report.trim().split('\n');
      const stat = parseProcStat(lines[lines.length - 1]!);
      void pid.then((p) =>
        resolve({ code: code ?? 1, wallS: (performance.now() - started) / 1000, cpuS: stat.childrenCpuS, output: Buffer.concat(output).toString('utf8'), pid: p }),
      );
    });
  });
  return { pid, done };
}

type ThreadClass = 'javascript' | 'engine' | 'node';

/**
 * The last CPU reading of every thread of every test worker (a child process of vitest's), keyed
 * by pid and tid. A worker's main thread runs the JavaScript; chDB names its threads (ThreadPool,
 * MergeMutate, BgSchPool, …); Node's unnamed ones are libuv's pool, where chDB runs the statements
 * JavaScript hands it, and V8's compiler threads.
 */
class WorkerThreads {
  private readonly last = new Map<string, { cls: ThreadClass; cpu: number }>();
  vitestOwnCpuS = 0;

  sample(vitestPid: number): void {
    const vitest = readProcStat(`/proc/${vitestPid}/stat`);
    if (vitest) this.vitestOwnCpuS = vitest.cpuS;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      if (readProcStat(`/proc/${entry}/stat`)?.ppid !== vitestPid) continue;
      let tids: string[];
      try {
        tids = readdirSync(`/proc/${entry}/task`);
      } catch {
        continue;
      }
      for (const tid of tids) {
        const stat = readProcStat(`/proc/${entry}/task/${tid}/stat`);
        if (!stat) continue;
        let comm = '';
        try {
          comm = readFileSync(`/proc/${entry}/task/${tid}/comm`, 'utf8').trim();
        } catch {
          continue;
        }
        const cls: ThreadClass = tid === entry ? 'javascript' : comm === 'node' ? 'node' : 'engine';
        this.last.set(`${entry}/${tid}`, { cls, cpu: stat.cpuS });
      }
    }
  }

  totals(): Record<ThreadClass, number> {
    const t: Record<ThreadClass, number> = { javascript: 0, engine: 0, node: 0 };
    for (const { cls, cpu } of this.last.values()) t[cls] += cpu;
    return t;
  }
}

interface FileCost {
  file: string;
  wallS: number;
  processCpuS: number;
  mainThreadCpuS: number;
  childProcessCpuS: number;
}

const round = (n: number, digits = 1): number => Math.round(n * 10 ** digits) / 10 ** digits;

export async function run(argv: string[]): Promise<number> {
  if (!existsSync('/proc/self/stat')) {
    console.error('bench suite: reads /proc, so it runs on Linux only');
    return 2;
  }
  const { values } = parseArgs({ args: argv, options: { target: { type: 'string', default: '120' }, top: { type: 'string', default: '15' } } });
  const targetS = Number(values.target);
  const top = Number(values.top);
  const scratch = mkdtempSync(path.join(tmpdir(), 'fh-bench-suite-'));
  const probeFile = path.join(scratch, 'files.jsonl');
  try {
    const env = { ...process.env, FLAKEHOUSE_SUITE_PROBE: probeFile };
    const suite = runMeasured(process.execPath, [packageBin('vitest'), 'run', '--config', 'bench/suite/vitest.config.ts'], env);
    const check = runMeasured(process.execPath, [packageBin('oxlint')], env);
    const threads = new WorkerThreads();
    const vitestPid = await suite.pid;
    let finished = false;
    const sampling = (async () => {
      while (!finished) {
        threads.sample(vitestPid);
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();
    const [suiteResult, checkResult] = await Promise.all([suite.done, check.done]);
    finished = true;
    await sampling;

    const files = readFileSync(probeFile, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as FileCost);
    const childProcesses = files.reduce((s, f) => s + f.childProcessCpuS, 0);
    const t = threads.totals();
    const parts = {
      vitestMainProcess: threads.vitestOwnCpuS,
      workersJavaScriptThread: t.javascript,
      workersEngineThreads: t.engine,
      workersNodeThreads: t.node,
      processesTheTestsStarted: childProcesses,
    };
    const attributed = Object.values(parts).reduce((s, v) => s + v, 0);
    const wallS = Math.max(suiteResult.wallS, checkResult.wallS);
    const cpuS = suiteResult.cpuS + checkResult.cpuS;
    const coresBusy = cpuS / wallS;
    const plain = stripVTControlCharacters(suiteResult.output);
    const result = {
      at: new Date().toISOString(),
      node: process.version,
      cores: availableParallelism(),
      suite: { exitCode: suiteResult.code, tests: /Tests\s+(.+)/.exec(plain)?.[1]?.trim() ?? null, wallS: round(suiteResult.wallS), cpuS: round(suiteResult.cpuS) },
      check: { exitCode: checkResult.code, wallS: round(checkResult.wallS), cpuS: round(checkResult.cpuS) },
      npmTest: { wallS: round(wallS), cpuS: round(cpuS), coresBusy: round(coresBusy, 2) },
      suiteCpuS: { ...Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, round(v)])), unattributed: round(suiteResult.cpuS - attributed) },
      target: { wallS: targetS, cpuSAtThisRate: round(targetS * coresBusy), cpuSOver: round(cpuS - targetS * coresBusy) },
      files: files
        .sort((a, b) => b.processCpuS + b.childProcessCpuS - (a.processCpuS + a.childProcessCpuS))
        .slice(0, top)
        .map((f) => ({
          file: path.relative(ROOT, f.file),
          wallS: round(f.wallS),
          cpuS: round(f.processCpuS + f.childProcessCpuS),
          javascriptThreadS: round(f.mainThreadCpuS),
          childProcessesS: round(f.childProcessCpuS),
        })),
    };
    console.log(JSON.stringify(result, null, 2));
    console.log(`wrote ${writeResult('suite', result)}`);
    if (suiteResult.code !== 0) console.error(plain.slice(-4000));
    if (checkResult.code !== 0) console.error(checkResult.output.slice(-4000));
    return suiteResult.code || checkResult.code;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
