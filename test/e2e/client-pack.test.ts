// The client package as a user gets it: client/ built (npm run build:client), packed with
// `npm pack`, installed from the tarball into an empty project with no registry at all (the
// registry points at a closed loopback port and npm is offline with an empty cache: the package
// must have no dependency to fetch), and then `npx flakehouse …` and the reporters run there.
import { execFile, type ExecFileOptions } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/process.js';

const CLIENT = path.join(REPO_ROOT, 'client');
const MAX_INSTALLED_BYTES = 20 * 1024 * 1024;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], opts: ExecFileOptions & { input?: string } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, { encoding: 'utf8', timeout: 60_000, maxBuffer: 16 * 1024 * 1024, ...opts }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') reject(new Error(`${file} ${args.join(' ')}: ${err.message}\n${String(stderr)}`));
      else resolve({ code: err ? Number(err.code) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
    child.stdin?.end(opts.input ?? '');
  });
}

/** What `du` counts: the blocks of every file and directory below `dir` (links not followed). */
function diskUsage(dir: string): number {
  let bytes = lstatSync(dir).blocks * 512;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    bytes += entry.isDirectory() ? diskUsage(p) : lstatSync(p).blocks * 512;
  }
  return bytes;
}

let scratch: string;
let project: string;
let tarball: string;
/** npm with no registry to reach and nothing cached. */
let npmEnv: NodeJS.ProcessEnv;
let packedFiles: string[] = [];
let server: Server;
let endpoint: string;
const received: { method: string; url: string; type: string; bytes: number }[] = [];

beforeAll(async () => {
  scratch = mkdtempSync(path.join(tmpdir(), 'fh-client-pack-'));
  npmEnv = {
    PATH: process.env.PATH ?? '',
    HOME: scratch,
    npm_config_cache: path.join(scratch, 'npm-cache'),
    npm_config_registry: 'http://127.0.0.1:9/',
    npm_config_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    npm_config_loglevel: 'warn',
  };
  // The global setup brings client/dist up to date (test/helpers/global-setup.ts). Not rebuilt here
  // while it exists: other files' runners load the reporters from it meanwhile.
  if (!existsSync(path.join(CLIENT, 'dist/cli.js'))) {
    const built = await run(process.execPath, [path.join(REPO_ROOT, 'scripts/build-client.mjs')], { cwd: REPO_ROOT });
    expect(built.code, built.stderr).toBe(0);
  }
  const packed = await run('npm', ['pack', CLIENT, '--json', '--pack-destination', scratch], { cwd: scratch, env: npmEnv });
  expect(packed.code, packed.stderr).toBe(0);
  const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
  tarball = path.join(scratch, info!.filename);
  packedFiles = info!.files.map((f) => f.path);

  project = path.join(scratch, 'project');
  rmSync(project, { recursive: true, force: true });
  mkdirSync(project);
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'a-project', version: '1.0.0', private: true, type: 'module' }));
  const installed = await run('npm', ['install', '--save-dev', tarball], { cwd: project, env: npmEnv });
  expect(installed.code, installed.stderr).toBe(0);

  server = createServer((req, res) => {
    let bytes = 0;
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', type: req.headers['content-type'] ?? '', bytes });
      res.writeHead(req.url?.startsWith('/v1/traces') ? 200 : 204, { 'content-type': 'application/json' });
      res.end(req.url?.startsWith('/v1/traces') ? '{}' : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** `npx flakehouse …` in the project (npm is offline with no registry: it cannot install anything). */
function npx(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return run('npx', ['flakehouse', ...args], { cwd: project, env: { ...npmEnv, ...env } });
}

describe('the client package (client/, `flakehouse` on npm)', () => {
  it('declares no dependency and packs only its build', () => {
    const pkg = JSON.parse(readFileSync(path.join(CLIENT, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(pkg.name).toBe('flakehouse');
    expect(pkg.private).toBeUndefined();
    for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies', 'bundleDependencies', 'scripts']) expect(pkg[field], field).toBeUndefined();
    expect(packedFiles).toEqual(expect.arrayContaining(['package.json', 'README.md', 'dist/cli.js', 'dist/vitest.js', 'dist/jest.js', 'dist/playwright.js', 'dist/THIRD_PARTY_LICENSES.txt']));
    expect(packedFiles.filter((f) => !f.startsWith('dist/') && f !== 'package.json' && f !== 'README.md')).toEqual([]);
    expect(packedFiles.filter((f) => f.endsWith('.ts') || f.includes('.built-at'))).toEqual([]);
  });

  it('installs from the tarball alone, as one package of at most 20 MB', () => {
    const modules = path.join(project, 'node_modules');
    expect(readdirSync(modules).filter((n) => !n.startsWith('.')).sort()).toEqual(['flakehouse']);
    const bytes = diskUsage(modules);
    console.log(`client package installed: ${(bytes / 1024 / 1024).toFixed(2)} MB in node_modules (${path.basename(tarball)})`);
    expect(bytes).toBeLessThanOrEqual(MAX_INSTALLED_BYTES);
    const pkg = JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    expect(Object.keys(pkg.devDependencies)).toEqual(['flakehouse']);
  });

  it('npx flakehouse --help and --version work there', async () => {
    const help = await npx(['--help']);
    expect(help.stderr).toBe('');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: flakehouse <command> \[options\]/);
    expect(help.stdout).toContain('report [--strict]');

    const version = await npx(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout).toBe(`${(JSON.parse(readFileSync(path.join(CLIENT, 'package.json'), 'utf8')) as { version: string }).version}\n`);
  });

  it('the server commands say they need the server (exit 2), no stack trace', async () => {
    for (const command of [['serve'], ['validate']]) {
      const res = await run(path.join(project, 'node_modules/.bin/flakehouse'), command, { cwd: project, env: npmEnv });
      expect(res.code, command.join(' ')).toBe(2);
      expect(res.stderr).toMatch(/^flakehouse: this needs the Flakehouse server .*client package `flakehouse` leaves out/);
      expect(res.stderr).not.toContain('    at ');
    }
  });

  it('report sends a JUnit file as OTLP to the endpoint (the bundled parser, encoder and delivery)', async () => {
    writeFileSync(
      path.join(project, 'junit.xml'),
      '<testsuite name="s" tests="2"><testcase classname="a" name="passes" time="0.1"/><testcase classname="a" name="fails" time="0.2"><failure message="boom">stack</failure></testcase></testsuite>',
    );
    received.length = 0;
    const res = await run(path.join(project, 'node_modules/.bin/flakehouse'), ['report', '--strict', '--json', 'junit.xml'], {
      cwd: project,
      env: { ...npmEnv, SERVICE_ENDPOINT: endpoint, SERVICE_TOKEN: `fh_${'0'.repeat(48)}`, SERVICE_COMMIT_SHA: 'abc1234', SERVICE_BRANCH: 'main', SERVICE_BUFFER_DIR: path.join(scratch, 'buffer') },
    });
    expect(res.stderr.split('\n').filter((l) => / at |Error:/.test(l))).toEqual([]);
    expect(res.code, res.stderr).toBe(0);
    expect((JSON.parse(res.stdout) as { delivered: boolean }).delivered).toBe(true);
    expect(received).toContainEqual(expect.objectContaining({ method: 'POST', url: '/v1/traces', type: 'application/x-protobuf' }));
  });

  it('the reporters import as flakehouse/vitest, /jest and /playwright', async () => {
    const script = "for (const r of ['vitest', 'jest', 'playwright']) { const m = await import(`flakehouse/${r}`); const x = r === 'jest' ? new m.default({ rootDir: process.cwd() }, {}) : new m.default({}); console.log(r, typeof m.default, typeof x); }";
    const res = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: project, env: npmEnv });
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout).toBe('vitest function object\njest function object\nplaywright function object\n');
    expect(existsSync(path.join(project, 'node_modules/flakehouse/src'))).toBe(false);
  });
});
