// Starts the real daemon in this test process: real chDB (one data path per process, a database
// per daemon), real lmdb queue in a scratch dir (helpers/scratch.ts), real HTTP on a random port.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadServerSettings } from '../../src/config/daemon-env.js';
import { loadServiceConfig } from '../../src/config/service-yml.js';
import { startDaemon, type Daemon } from '../../src/main/daemon.js';
import { createLogger } from '../../src/telemetry/logger.js';
import type { Logger } from 'pino';
import type { Session } from 'chdb';
import { SCRATCH_DIR } from './scratch.js';
import { openStore, type Store } from '../../src/store/client.js';
import { migrate } from '../../src/store/migrate.js';

export const CHDB_PATH = path.join(SCRATCH_DIR, `fh-test-chdb-${process.pid}`);

/**
 * One chDB connection held open for the life of the test process. chDB shuts its engine down when
 * the last connection on a path closes and boots it again for the next, loading every database
 * on the path: with a daemon per test that made each start slower than the last (0.45 s for the
 * first, 1.4 s after thirty). Held open, a start stays near 0.25 s; `close()` drops its database
 * through this connection so the engine does not carry the tables of finished tests.
 */
let engine: Session | undefined;
export async function chdbEngine(): Promise<Session> {
  if (!engine) {
    mkdirSync(CHDB_PATH, { recursive: true });
    const chdb = await import('chdb');
    engine = new chdb.Session(CHDB_PATH);
  }
  return engine;
}

/**
 * A store of its own for a test file that needs no daemon: a fresh database on this process's chDB
 * path, migrated unless `migrated: false`. `dropTestStore` removes the database and closes it.
 */
export async function openTestStore(opts: { migrated?: boolean } = {}): Promise<Store> {
  await chdbEngine();
  const store = await openStore({ chdbPath: CHDB_PATH, database: `t_${randomBytes(6).toString('hex')}` });
  if (opts.migrated !== false) await migrate(store);
  return store;
}

export async function dropTestStore(store: Store | undefined): Promise<void> {
  if (!store) return;
  await store.command(`DROP DATABASE IF EXISTS \`${store.database}\``);
  await store.close();
}

export interface TestDaemon {
  daemon: Daemon;
  url: string;
  token: string;
  adminToken: string;
  dataDir: string;
  database: string;
  env: Record<string, string>;
  request(method: string, urlPath: string, opts?: { token?: string | null; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; headers: Headers; json: any; text: string }>;
  /** Posts native batches in order (each must get 202) and waits until every one is processed. */
  ingest(...batches: Record<string, unknown>[]): Promise<string[]>;
  /**
   * Waits until the queue is empty (every accepted job processed, or dead), checked in memory: no
   * request, no query. Before polling the API for what the pipeline writes, so the poll finds it at
   * once instead of asking again while the jobs are still in flight. Throws as `waitFor` does.
   */
  settled(timeoutMs?: number): Promise<void>;
  /**
   * Polls until `fn` returns a truthy value (or throws after `timeoutMs`, 30 s by default: a ceiling
   * for a machine whose cores are busy with other work, not an expected time).
   */
  waitFor<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs?: number): Promise<T>;
  /** Stops the daemon; keeps the data dir and database so a restart sees the same state. */
  stop(): Promise<void>;
  /** Stops and starts again on the same data dir and database; `overrides` replace start options. */
  restart(overrides?: { work?: boolean; env?: Record<string, string> }): Promise<TestDaemon>;
  close(): Promise<void>;
}

export async function startTestDaemon(
  opts: { env?: Record<string, string>; work?: boolean; dataDir?: string; database?: string; pipelineFile?: string; logger?: Logger; rateLimitClock?: () => number; sessionClock?: () => number; dashboardDir?: string; threadFromSources?: boolean } = {},
): Promise<TestDaemon> {
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(SCRATCH_DIR, 'fh-test-data-'));
  const database = opts.database ?? `t_${randomBytes(6).toString('hex')}`;
  const env: Record<string, string> = {
    SERVICE_DATA_DIR: dataDir,
    SERVICE_PORT: '0',
    SERVICE_HOST: '127.0.0.1',
    SERVICE_CLICKHOUSE_DATABASE: database,
    // POLL_INTERVAL_MS stays at its default (250 ms): the runtime wakes when a job is enqueued or a
    // retry is due, so a shorter poll only costs CPU (20 ms cost each idle daemon 2.5 % of a core).
    // A pipeline thread costs a second start of the pipeline in every daemon; the tests that cover
    // the thread path (pipeline-thread, worker-isolation, dead-letters) set it explicitly.
    SERVICE_PIPELINE_THREAD: 'false',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...opts.env,
  };
  await chdbEngine();
  const settings = loadServerSettings(env, dataDir);
  const service = loadServiceConfig({ env, cwd: dataDir });
  // A pipeline thread runs the CLI build's worker while it is current (src/pipeline/thread/entry.mjs);
  // `threadFromSources` has this daemon's thread transpile the sources instead, as without a build.
  // Workers copy the environment when they start, so the variable is set only meanwhile.
  const fromSourcesBefore = process.env.FLAKEHOUSE_CLI_FROM_SOURCES;
  if (opts.threadFromSources) process.env.FLAKEHOUSE_CLI_FROM_SOURCES = '1';
  const daemon = await startDaemon({
    settings,
    service,
    logger: opts.logger ?? createLogger(settings.logLevel),
    chdbPath: CHDB_PATH,
    work: opts.work,
    pipelineFile: opts.pipelineFile,
    rateLimitClock: opts.rateLimitClock,
    sessionClock: opts.sessionClock,
    dashboardDir: opts.dashboardDir,
    announce: () => {},
  }).finally(() => {
    if (fromSourcesBefore === undefined) delete process.env.FLAKEHOUSE_CLI_FROM_SOURCES;
    else process.env.FLAKEHOUSE_CLI_FROM_SOURCES = fromSourcesBefore;
  });
  const { readFileSync } = await import('node:fs');
  const token = readFileSync(path.join(dataDir, 'bootstrap-token'), 'utf8').trim();
  let stopped = false;
  // Receipts whose run.processed event was delivered (after the lease committed).
  const processed = new Set<string>();
  daemon.runtime.onEvent((e) => {
    if (e.type === 'run.processed') processed.add(String(e.data.receiptId));
  });
  const td: TestDaemon = {
    daemon,
    url: daemon.url,
    token,
    adminToken: daemon.adminToken,
    dataDir,
    database,
    env,
    async request(method, urlPath, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      const tok = o.token === undefined ? token : o.token;
      if (tok) headers.authorization = `Bearer ${tok}`;
      let body: string | Uint8Array | undefined;
      if (o.body !== undefined) {
        if (typeof o.body === 'string' || o.body instanceof Uint8Array) body = o.body;
        else {
          body = JSON.stringify(o.body);
          headers['content-type'] ??= 'application/json';
        }
      }
      const res = await fetch(`${daemon.url}${urlPath}`, { method, headers, body });
      const text = await res.text();
      let json: any = undefined;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: res.status, headers: res.headers, json, text };
    },
    async ingest(...batches) {
      const receipts: string[] = [];
      for (const b of batches) {
        const res = await td.request('POST', '/v1/ingest', { body: b });
        if (res.status !== 202) throw new Error(`ingest: expected 202, got ${res.status} ${res.text}`);
        receipts.push(String(res.json.receiptId));
      }
      await td.waitFor(async () => receipts.every((r) => processed.has(r)), 60_000);
      return receipts;
    },
    async settled(timeoutMs) {
      await td.waitFor(async () => daemon.queue.depth() === 0, timeoutMs);
    },
    async waitFor(fn, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      // Each poll is a request and a query: polling fast at first and then less often leaves the
      // two cores to the work being waited for.
      let pauseMs = 20;
      for (;;) {
        const v = await fn();
        if (v) return v;
        if (Date.now() > deadline) throw new Error('waitFor: timed out');
        await new Promise((r) => setTimeout(r, pauseMs));
        pauseMs = Math.min(Math.round(pauseMs * 1.5), 200);
      }
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await daemon.close();
    },
    async restart(overrides = {}) {
      await td.stop();
      return startTestDaemon({ ...opts, work: overrides.work ?? true, env: { ...opts.env, ...overrides.env }, dataDir, database });
    },
    async close() {
      await td.stop();
      rmSync(dataDir, { recursive: true, force: true });
      // Not SYNC: that waits for every reference to the tables, and nothing needs the files gone now.
      await (await chdbEngine()).queryAsync(`DROP DATABASE IF EXISTS \`${database}\``);
    },
  };
  return td;
}

let seq = 0;
/** A valid native batch with `n` executions; override any part. */
export function nativeBatch(overrides: { key?: string; n?: number; status?: string; executions?: unknown[]; resource?: object; run?: object } = {}): Record<string, unknown> {
  const n = overrides.n ?? 3;
  const started = Date.parse('2026-11-20T10:00:00Z') + seq++ * 1000;
  return {
    contractVersion: '0.1.0',
    idempotencyKey: overrides.key ?? `key-${process.pid}-${seq}-${randomBytes(4).toString('hex')}`,
    resource: { ciProvider: 'github_actions', commitSha: 'abcdef1234', branch: 'main', trigger: 'push', ...overrides.resource },
    run: { status: 'passed', startedAt: new Date(started).toISOString(), ...overrides.run },
    executions:
      overrides.executions ??
      Array.from({ length: n }, (_, i) => ({
        filePath: `src/module${i % 7}.test.ts`,
        suite: `Suite ${i % 7}`,
        title: `case ${i}`,
        status: 'pass',
        startedAt: started + i,
        durationMs: 10 + i,
      })),
  };
}
