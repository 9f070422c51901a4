// A vitest setup file for bench/suite.ts: after each test file, one JSON line with the CPU its
// worker spent on it (the whole process, its JavaScript thread alone, and the processes its tests
// started and waited for), read from /proc. Runs once per file, around the file's own hooks.
import { appendFileSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';

interface Sample {
  at: number;
  process: number;
  children: number;
  mainThread: number;
}

/** utime+stime and cutime+cstime of a /proc stat line, in seconds (clock ticks of 1/100 s). */
function ticks(statPath: string): { own: number; children: number } {
  const stat = readFileSync(statPath, 'utf8');
  // Fields after the parenthesised command name, which may itself hold spaces.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  return { own: (f[11]! + f[12]!) / 100, children: (f[13]! + f[14]!) / 100 };
}

function sample(): Sample {
  const whole = ticks('/proc/self/stat');
  return { at: performance.now(), process: whole.own, children: whole.children, mainThread: ticks(`/proc/self/task/${process.pid}/stat`).own };
}

let start: Sample | undefined;

beforeAll(() => {
  start = sample();
});

afterAll(() => {
  const out = process.env.FLAKEHOUSE_SUITE_PROBE;
  if (!out || !start) return;
  const end = sample();
  const line = {
    file: expect.getState().testPath ?? '',
    pid: process.pid,
    wallS: (end.at - start.at) / 1000,
    processCpuS: end.process - start.process,
    mainThreadCpuS: end.mainThread - start.mainThread,
    childProcessCpuS: end.children - start.children,
  };
  appendFileSync(out, `${JSON.stringify(line)}\n`);
});
