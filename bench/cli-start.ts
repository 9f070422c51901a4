// `npm run bench -- cli-start [--rounds 15] [--no-npx] [--node PATH]`
//
// How long a `flakehouse` command takes to start and finish when it needs no network: `--help`,
// `--version`, `report --help` (the report command's module loaded, its usage printed, exit 2) and
// `config --json` (settings and CI detection). Wall time of the whole process, median and p90 over
// the rounds, for:
//
//   repo, build    node bin/flakehouse.js in this checkout, on the CLI build (npm run build:cli)
//   repo, sources  the same through tsx (FLAKEHOUSE_CLI_FROM_SOURCES=1; no build, or a stale one)
//   repo, npx      npx flakehouse in this checkout (what the README said to run until the client)
//   client         node_modules/.bin/flakehouse of the client package (npm run build:client, npm
//                  pack ./client, installed from the tarball into an empty project)
//   client, npx    npx flakehouse in that project
//   node -e 0      Node starting and exiting (the floor)
//   client, node N the client's command on another Node (--node PATH: e.g. 24, whose compile cache
//                  client/src/cli/bin.ts turns on; the first, unmeasured run fills it)
//
// The variants take turns within each round, so a busy machine slows them alike. Result:
// bench/results/cli-start-latest.json.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freshBuild } from '../bin/built-cli.js';
import { writeResult } from './results.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

interface Variant {
  name: string;
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Exits 0 whatever the command (the baseline). */
  alwaysZero?: boolean;
}

const COMMANDS: { name: string; args: string[]; code: number }[] = [
  { name: '--help', args: ['--help'], code: 0 },
  { name: '--version', args: ['--version'], code: 0 },
  { name: 'report --help', args: ['report', '--help'], code: 2 },
  { name: 'config --json', args: ['config', '--json'], code: 0 },
];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function p90(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.9) - 1)]!;
}

/** Builds, packs and installs the client into an empty project; returns the project directory. */
function installClient(scratch: string, env: NodeJS.ProcessEnv): { project: string; tarballBytes: number } {
  execFileSync(process.execPath, [path.join(ROOT, 'scripts/build-client.mjs'), '--if-stale'], { cwd: ROOT, stdio: 'inherit' });
  const packed = JSON.parse(execFileSync('npm', ['pack', path.join(ROOT, 'client'), '--json', '--pack-destination', scratch], { cwd: scratch, env, encoding: 'utf8' })) as { filename: string; size: number }[];
  const project = path.join(scratch, 'project');
  mkdirSync(project);
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'a-project', version: '1.0.0', private: true }));
  execFileSync('npm', ['install', '--save-dev', path.join(scratch, packed[0]!.filename)], { cwd: project, env, stdio: 'inherit' });
  return { project, tarballBytes: packed[0]!.size };
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { rounds: { type: 'string', default: '15' }, 'no-npx': { type: 'boolean', default: false }, node: { type: 'string' } }, strict: true });
  const rounds = Number(values.rounds);
  const scratch = mkdtempSync(path.join(tmpdir(), 'fh-bench-cli-start-'));
  try {
    // No registry and an empty cache: nothing can be fetched, the client must install from its tarball.
    const base: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: scratch, npm_config_cache: path.join(scratch, 'npm-cache'), npm_config_registry: 'http://127.0.0.1:9/', npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
    const { project, tarballBytes } = installClient(scratch, base);
    // Today's path: the CLI build when it is current (npm start and the test suite make it).
    execFileSync(process.execPath, [path.join(ROOT, 'scripts/build-cli.mjs'), '--if-stale'], { cwd: ROOT, stdio: 'inherit' });
    const repoBuildCurrent = freshBuild() !== undefined;
    // The repository's commands run where a user's project would: a directory with no service.yml.
    const userDir = path.join(scratch, 'elsewhere');
    mkdirSync(userDir);
    const variants: Variant[] = [
      // Node starting and doing nothing: the floor under every variant.
      { name: 'node -e 0', file: process.execPath, args: ['-e', '0', '--'], cwd: userDir, env: base, alwaysZero: true },
      { name: 'repo, build', file: process.execPath, args: [path.join(ROOT, 'bin/flakehouse.js')], cwd: userDir, env: base },
      { name: 'repo, sources', file: process.execPath, args: [path.join(ROOT, 'bin/flakehouse.js')], cwd: userDir, env: { ...base, FLAKEHOUSE_CLI_FROM_SOURCES: '1' } },
      { name: 'client', file: path.join(project, 'node_modules/.bin/flakehouse'), args: [], cwd: project, env: base },
    ];
    if (values.node) {
      const version = execFileSync(values.node, ['--version'], { encoding: 'utf8' }).trim();
      variants.push({ name: `client, node ${version}`, file: values.node, args: [path.join(project, 'node_modules/flakehouse/dist/cli.js')], cwd: project, env: base });
    }
    if (!values['no-npx']) {
      // npx in the checkout uses the user's npm cache (it links the checkout into it).
      variants.push({ name: 'repo, npx', file: 'npx', args: ['flakehouse'], cwd: ROOT, env: { ...base, npm_config_cache: process.env.npm_config_cache ?? path.join(process.env.HOME ?? scratch, '.npm') } });
      variants.push({ name: 'client, npx', file: 'npx', args: ['flakehouse'], cwd: project, env: base });
    }
    const times = new Map<string, number[]>();
    const cpu = new Map<string, number[]>();
    for (const v of variants) {
      for (const c of COMMANDS) {
        times.set(`${v.name}|${c.name}`, []);
        cpu.set(`${v.name}|${c.name}`, []);
      }
    }
    const cpuFile = path.join(scratch, 'cpu');
    // One unmeasured run of each: the first start reads files the later ones find cached.
    for (const v of variants) for (const c of COMMANDS) spawnSync(v.file, [...v.args, ...c.args], { cwd: v.cwd, env: v.env, stdio: 'ignore' });
    for (let r = 0; r < rounds; r++) {
      for (const c of COMMANDS) {
        for (const v of r % 2 ? [...variants].reverse() : variants) {
          // GNU time, when present, adds the CPU seconds (user + system), which a loaded machine
          // changes less than the wall time.
          const argv = [...v.args, ...c.args];
          const t0 = process.hrtime.bigint();
          const res = TIME ? spawnSync(TIME, ['-f', '%U %S', '-o', cpuFile, v.file, ...argv], { cwd: v.cwd, env: v.env, encoding: 'utf8' }) : spawnSync(v.file, argv, { cwd: v.cwd, env: v.env, encoding: 'utf8' });
          const ms = Number(process.hrtime.bigint() - t0) / 1e6;
          if (res.status !== (v.alwaysZero ? 0 : c.code)) throw new Error(`${v.name}: flakehouse ${c.args.join(' ')} exited ${String(res.status)}, expected ${c.code}\n${res.stderr}`);
          times.get(`${v.name}|${c.name}`)!.push(ms);
          if (TIME) {
            const [user, sys] = readFileSync(cpuFile, 'utf8').trim().split(/\s+/).slice(-2).map(Number);
            cpu.get(`${v.name}|${c.name}`)!.push((user! + sys!) * 1000);
          }
        }
      }
    }
    const results = [...times].map(([key, ms]) => {
      const [variant, command] = key.split('|') as [string, string];
      const cpuMs = cpu.get(key)!;
      return { variant, command, medianMs: Math.round(median(ms)), p90Ms: Math.round(p90(ms)), ...(cpuMs.length ? { medianCpuMs: Math.round(median(cpuMs)) } : {}), runs: ms.length };
    });
    const installedBytes = Number(execFileSync('du', ['-sk', path.join(project, 'node_modules')], { encoding: 'utf8' }).split('\t')[0]) * 1024;
    const clientPkg = JSON.parse(readFileSync(path.join(ROOT, 'client/package.json'), 'utf8')) as { version: string };
    console.log(`cli-start: ${rounds} rounds; node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'}), load ${loadavg()[0]!.toFixed(2)}`);
    console.log(`client ${clientPkg.version}: tarball ${(tarballBytes / 1024).toFixed(0)} KiB, installed ${(installedBytes / 1024 / 1024).toFixed(2)} MB; repo CLI build ${repoBuildCurrent ? 'current' : 'stale (repo, build ran the sources)'}`);
    const pad = (s: string, n: number): string => s.padEnd(n);
    console.log(`${pad('command', 16)}${variants.map((v) => pad(v.name, 23)).join('')}(wall median / p90 ms${TIME ? ', CPU median ms' : ''})`);
    for (const c of COMMANDS) {
      const cells = variants.map((v) => {
        const x = results.find((r) => r.variant === v.name && r.command === c.name)!;
        return pad(`${x.medianMs} / ${x.p90Ms}${x.medianCpuMs !== undefined ? `, ${x.medianCpuMs}` : ''}`, 23);
      });
      console.log(`${pad(c.name, 16)}${cells.join('')}`);
    }
    const file = writeResult('cli-start', {
      bench: 'cli-start',
      at: new Date().toISOString(),
      node: process.version,
      cores: availableParallelism(),
      cpu: cpus()[0]?.model,
      load1: loadavg()[0],
      rounds,
      client: { version: clientPkg.version, tarballBytes, installedBytes },
      repoBuildCurrent,
      results,
    });
    console.log(`wrote ${file}`);
    return 0;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
