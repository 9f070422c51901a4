// A vitest setup file for bench/suite.ts: after each test file, one JSON line with the CPU its
// worker spent on it (the whole process, its JavaScript thread alone, and the processes its tests
// started and waited for), read from /proc. Runs once per file, around the file's own hooks.
import { appendFileSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';
import { parseProcStat } from '../proc-stat.js';

interface Sample {
  at: number;
  process: number;
  children: number;
  mainThread: number;
}

function sample(): Sample {
  const whole = parseProcStat(readFileSync('/proc/self/stat', 'utf8'));
  const mainThread = parseProcStat(readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8'));
  return { at: performance.now(), process: whole.cpuS, children: whole.childrenCpuS, mainThread: mainThread.cpuS };
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
