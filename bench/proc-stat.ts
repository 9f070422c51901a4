// A process's or thread's CPU from /proc/<pid>[/task/<tid>]/stat (Linux), for the benches that say
// where the CPU went. Fields are counted after the parenthesised command name, which may itself
// hold spaces; times are clock ticks of 1/100 s (USER_HZ).
import { readFileSync } from 'node:fs';

export interface ProcStat {
  ppid: number;
  nice: number;
  /** utime + stime, seconds. */
  cpuS: number;
  /** cutime + cstime: the CPU of the children it waited for, seconds. */
  childrenCpuS: number;
}

export function parseProcStat(stat: string): ProcStat {
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  return { ppid: f[1]!, nice: f[16]!, cpuS: (f[11]! + f[12]!) / 100, childrenCpuS: (f[13]! + f[14]!) / 100 };
}

/** undefined when the process or thread ended between listing and reading. */
export function readProcStat(file: string): ProcStat | undefined {
  try {
    return parseProcStat(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}
