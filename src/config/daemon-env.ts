// The daemon's own settings (listen address, storage, queue, limits), read from the environment
// only: they belong to the deployment, not to a repository's service.yml. Each variable is
// declared once in VARS, which drives parsing, defaults and SERVER_ENV_VARS (the README table).
import path from 'node:path';
import { z } from 'zod';
import { ConfigError, expected, throwConfigErrors } from '../../client/src/contract/config/errors.js';
import { SERVER_ADDRESS_VARS } from '../../client/src/contract/config/server-address.js';
import type { Field } from './service-yml.js';
import { booleanField, envReader, intField, numberField, stringField, urlField } from './service-yml.js';
import type { S3Settings } from '../artifacts/s3.js';
import { loadIntegrationSettings, type NotificationSettings, type TrackerSettings } from './integrations.js';
import { loadAiSettings, type AiSettings } from './ai.js';

export const PROCESS_ROLES = ['all', 'ingest', 'worker'] as const;
export type ServiceRole = (typeof PROCESS_ROLES)[number];

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface ServerSettings {
  port: number;
  host: string;
  /** Absolute. */
  dataDir: string;
  clickhouse: {
    /** Unset: the embedded engine (chDB) under dataDir. */
    url?: string;
    user?: string;
    password?: string;
    database: string;
    /** A ClickHouse cluster name (requires url): replicated tables behind Distributed ones (docs/clickhouse-cluster.md). */
    cluster?: string;
  };
  adminToken?: string;
  /** The bearer token senders present to an agent (a graph that needs no store, src/main/agent.ts); unset: generated. */
  agentToken?: string;
  logLevel: LogLevel;
  /** One `info` line per answered request (SERVICE_LOG_REQUESTS); otherwise request lines are at `debug`. */
  logRequests: boolean;
  queue: {
    visibilityMs: number;
    /** 0 disables backpressure. */
    maxDepth: number;
    pollIntervalMs: number;
    maxAttempts: number;
    /** First retry delay of a job that failed alone (doubles per attempt, up to a minute). */
    retryBackoffMs: number;
    /** Bytes the queue's stored data may take before ingest answers 507; 0: only the disk limits it. */
    maxBytes: number;
    /** NATS JetStream (nats://host:port[,...]); unset: the embedded on-disk queue under dataDir. */
    url?: string;
    /** Streams, subjects and KV buckets are named after it (several deployments may share one NATS). */
    prefix: string;
    /** Partition subjects jobs are spread over by project; each is owned by one worker at a time. */
    partitions: number;
    /** A worker's partition lease not renewed for this long is taken over by another worker (ms). */
    leaseTtlMs: number;
    /** How long a starting process waits for NATS before it gives up (ms). */
    connectTimeoutMs: number;
  };
  /** What this process runs: `all` (today's daemon), `ingest` (receivers only, no storage) or `worker` (pipeline + query API). */
  role: ServiceRole;
  /** Free bytes on the data dir's disk below which ingest answers 507; 0 turns the check off. */
  minFreeBytes: number;
  rateLimit: { max: number; windowMs: number };
  clusterThreshold: number;
  /** Run processors and exporters on their own thread, off the thread that answers HTTP. */
  pipelineThread: boolean;
  artifactRetentionDays?: number;
  executionRetentionDays?: number;
  /** Interval between retention sweeps in the worker (ms). */
  retentionSweepMs: number;
  publicApiUrl?: string;
  selfOtelEndpoint?: string;
  /** Interval between OTLP metric exports (ms). */
  selfOtelIntervalMs: number;
  /** Notification channels from the environment, SMTP, SSRF allowance (config/integrations.ts). */
  notifications: NotificationSettings;
  /** Issue tracker credentials and target (config/integrations.ts). */
  tracker: TrackerSettings;
  /** Artifact storage; absent when SERVICE_S3_BUCKET is unset (artifacts disabled). */
  s3?: S3Settings;
  /** AI root-cause analysis; absent when SERVICE_AI_PROVIDER is unset (RCA off). */
  ai?: AiSettings;
  /** The read-only ClickHouse SQL endpoint (docs/sql.md). */
  sql: {
    enabled: boolean;
    /** Its own port, serving the endpoint at `/`; unset: only /clickhouse on the main port. */
    port?: number;
    maxExecutionTimeSec: number;
    maxResultRows: number;
    maxMemoryBytes: number;
    maxThreads: number;
    maxConcurrent: number;
  };
  /** The dashboard served at / (static web/dist, sessions); docs/dashboard.md. */
  dashboard: { enabled: boolean; sessionTtlHours: number };
  /** Timeouts and caps at the HTTP door (docs/api.md "Limits at the door"). */
  door: DoorSettings;
}

/** What one stranger can make the HTTP server hold: time, connections, bodies in memory. */
export interface DoorSettings {
  /** Time to receive a request's line and headers (also: an opened connection that sends nothing). */
  headersTimeoutMs: number;
  /** Time to receive a whole request, body included; later: 408 and the socket is closed. */
  requestTimeoutMs: number;
  maxConnections: number;
  maxConnectionsPerAddress: number;
  /** Request bodies being received and decoded at once; more wait up to bodyWaitMs, then 503. */
  maxConcurrentBodies: number;
  bodyWaitMs: number;
}

export interface ServerEnvVar {
  name: string;
  description: string;
  default?: string;
}

interface VarSpec<T> {
  name: string;
  description: string;
  field: Field<T>;
  default?: T;
}

type DefaultedSpec<T> = VarSpec<T> & { default: T };

/** A variable with a default (always yields a value). */
function d<T>(spec: DefaultedSpec<T>): DefaultedSpec<T> {
  return spec;
}

/** A variable without a default (yields undefined when unset). */
function o<T>(spec: VarSpec<T>): VarSpec<T> {
  return spec;
}

const logLevelField: Field<LogLevel> = {
  kind: 'string',
  desc: `one of ${LOG_LEVELS.join(', ')}`,
  // Case-insensitive: LOG_LEVEL=INFO is common in deployment manifests.
  schema: z.preprocess(
    (value) => (typeof value === 'string' ? value.toLowerCase() : value),
    z.enum(LOG_LEVELS, { error: expected(`one of ${LOG_LEVELS.join(', ')}`) }),
  ),
};

// Interpolated into DDL (ON CLUSTER '<name>', Distributed('<name>', ...)): the names remote_servers allows.
const clusterField: Field<string> = {
  kind: 'string',
  desc: 'a cluster name ([A-Za-z0-9_.-]*)',
  schema: z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/),
};

const roleField: Field<ServiceRole> = {
  kind: 'string',
  desc: `one of ${PROCESS_ROLES.join(', ')}`,
  schema: z.enum(PROCESS_ROLES, { error: expected(`one of ${PROCESS_ROLES.join(', ')}`) }),
};

const natsUrlField: Field<string> = {
  kind: 'string',
  desc: 'nats://host:port (comma-separated for several servers)',
  schema: z.string().refine(
    (value) => value.split(',').every((u) => URL.canParse(u.trim()) && ['nats:', 'tls:'].includes(new URL(u.trim()).protocol)),
    { error: expected('nats://host:port (comma-separated for several servers)') },
  ),
};

const VARS = {
  // The four the client's commands read too (where the server is, its admin token, its database):
  // declared in the client's contract (client/src/contract/config/server-address.ts).
  port: d(SERVER_ADDRESS_VARS.port),
  host: d({ name: 'SERVICE_HOST', description: 'HTTP listen address', field: stringField(), default: '127.0.0.1' }),
  dataDir: d(SERVER_ADDRESS_VARS.dataDir),
  clickhouseUrl: o({
    name: 'SERVICE_CLICKHOUSE_URL',
    description: 'ClickHouse HTTP URL; unset uses the embedded engine (chDB) under the data directory',
    field: urlField(),
  }),
  clickhouseUser: o({ name: 'SERVICE_CLICKHOUSE_USER', description: 'ClickHouse user', field: stringField() }),
  // Verbatim: whitespace may be part of a password.
  clickhousePassword: o({ name: 'SERVICE_CLICKHOUSE_PASSWORD', description: 'ClickHouse password', field: { ...stringField(), verbatim: true } }),
  clickhouseDatabase: d(SERVER_ADDRESS_VARS.clickhouseDatabase),
  clickhouseCluster: o({
    name: 'SERVICE_CLICKHOUSE_CLUSTER',
    description:
      'ClickHouse cluster (a remote_servers name) the tables span: replicated tables ON CLUSTER behind Distributed ones (docs/clickhouse-cluster.md); requires SERVICE_CLICKHOUSE_URL',
    field: clusterField,
  }),
  adminToken: o(SERVER_ADDRESS_VARS.adminToken),
  agentToken: o({
    name: 'SERVICE_AGENT_TOKEN',
    description: 'bearer token senders present to an agent (a pipeline whose components need no store, docs/pipeline.md "Agent mode"); unset generates one into <data dir>/agent-token',
    field: stringField(),
  }),
  logLevel: d<LogLevel>({ name: 'LOG_LEVEL', description: 'structured log level', field: logLevelField, default: 'info' }),
  logRequests: d({
    name: 'SERVICE_LOG_REQUESTS',
    description: 'true: one `info` line per answered request (method, URL, status, time); otherwise that line is at `debug`',
    field: booleanField(),
    default: false,
  }),
  // ≥ 100 rather than a production-minded ≥ 1000 so redelivery tests stay fast; docs/architecture.md (queue contract) warns that
  // values below the slowest job cause double processing.
  visibilityMs: d({
    name: 'SERVICE_QUEUE_VISIBILITY_MS',
    description: 'how long a dequeued job is hidden before redelivery (ms); keep above the slowest job',
    field: intField(100),
    default: 300_000,
  }),
  maxDepth: d({
    name: 'SERVICE_MAX_QUEUE_DEPTH',
    description: 'pending + in-flight jobs at which ingestion answers 503; 0 disables',
    field: intField(0),
    default: 10_000,
  }),
  pollIntervalMs: d({ name: 'POLL_INTERVAL_MS', description: 'worker idle poll interval between dequeue attempts (ms)', field: intField(1), default: 250 }),
  // Not in docs/contract.md: our own bound so a poison job is parked after N deliveries instead of being
  // redelivered forever.
  maxAttempts: d({
    name: 'SERVICE_QUEUE_MAX_ATTEMPTS',
    description: 'deliveries of a job before it is parked as failed (Flakehouse addition)',
    field: intField(1),
    default: 8,
  }),
  retryBackoffMs: d({
    name: 'SERVICE_QUEUE_RETRY_BACKOFF_MS',
    description: 'first retry delay of a job that failed alone (ms); doubles per attempt up to 60 s (Flakehouse addition)',
    field: intField(1),
    default: 1000,
  }),
  queueMaxBytes: d({
    name: 'SERVICE_QUEUE_MAX_BYTES',
    description: "bytes the queue's stored jobs may take on disk before ingest answers 507 insufficient_storage; 0: only the disk limits it (Flakehouse addition)",
    field: intField(0),
    default: 0,
  }),
  minFreeBytes: d({
    name: 'SERVICE_MIN_FREE_BYTES',
    description: "free bytes to keep on the data dir's disk: below this, ingest answers 507 insufficient_storage so the worker can still write what is queued; 0 turns the check off (Flakehouse addition)",
    field: intField(0),
    default: 64 * 1024 * 1024,
  }),
  role: d<ServiceRole>({
    name: 'SERVICE_ROLE',
    description: 'what this process runs: all (receivers, queue, pipeline, API), ingest (receivers only, enqueueing to SERVICE_QUEUE_URL; no storage) or worker (pipeline, query API and dashboard); `serve --role` sets it too (README "Scaling out")',
    field: roleField,
    default: 'all',
  }),
  queueUrl: o({
    name: 'SERVICE_QUEUE_URL',
    description: 'NATS JetStream server(s) for the queue, nats://host:4222 (comma-separated for a cluster); unset: the embedded on-disk queue. Required by the ingest and worker roles',
    field: natsUrlField,
  }),
  queuePrefix: d({
    name: 'SERVICE_QUEUE_PREFIX',
    description: 'prefix of the NATS streams, subjects and KV buckets (letters, digits, _), so deployments can share one NATS',
    field: { kind: 'string', desc: 'letters, digits and _ ([A-Za-z][A-Za-z0-9_]*)', schema: z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,31}$/) },
    default: 'flakehouse',
  }),
  queuePartitions: d({
    name: 'SERVICE_QUEUE_PARTITIONS',
    description: 'partition subjects jobs are spread over by a hash of the project, each owned by one worker at a time (NATS queue only; fixed for the life of the stream)',
    field: intField(1, 1024),
    default: 16,
  }),
  queueConnectTimeoutMs: d({
    name: 'SERVICE_QUEUE_CONNECT_TIMEOUT_MS',
    description: 'how long a starting process waits for NATS to answer before it exits naming SERVICE_QUEUE_URL (ms; NATS queue only; 0: fail at the first refusal)',
    field: intField(0),
    default: 30_000,
  }),
  partitionLeaseTtlMs: d({
    name: 'SERVICE_PARTITION_LEASE_TTL_MS',
    description: "how long a worker's partition lease lasts unrenewed before another worker takes the partition over (ms; NATS queue only)",
    field: intField(500),
    default: 15_000,
  }),
  rateLimitMax: d({ name: 'SERVICE_RATE_LIMIT_MAX', description: 'requests per project per window; 0 disables the limit', field: intField(0), default: 600 }),
  rateLimitWindowMs: d({ name: 'SERVICE_RATE_LIMIT_WINDOW_MS', description: 'rate-limit window (ms)', field: intField(1), default: 60_000 }),
  pipelineThread: d({
    name: 'SERVICE_PIPELINE_THREAD',
    description: 'run processors and exporters on a thread of their own, off the thread that answers HTTP (Flakehouse addition; false runs everything on one thread, see docs/pipeline.md "Threads")',
    field: booleanField(),
    default: true,
  }),
  clusterThreshold: d({
    name: 'SERVICE_CLUSTER_THRESHOLD',
    description: 'Jaccard similarity above which a new error signature joins an existing cluster',
    field: numberField(0, 1),
    default: 0.5,
  }),
  artifactRetentionDays: o({
    name: 'SERVICE_ARTIFACT_RETENTION_DAYS',
    description: 'global artifact retention (days); unset keeps all; clamped to at least the execution window',
    field: intField(1),
  }),
  retentionSweepMs: d({
    name: 'SERVICE_RETENTION_SWEEP_MS',
    description: 'interval between retention sweeps in the worker (ms); the first runs 30 s after start, or after one interval if shorter',
    field: intField(100),
    default: 3_600_000,
  }),
  executionRetentionDays: o({
    name: 'SERVICE_EXECUTION_RETENTION_DAYS',
    description: 'global raw-execution retention (days); unset keeps all; rollups are never pruned',
    field: intField(1),
  }),
  publicApiUrl: o({ name: 'SERVICE_PUBLIC_API_URL', description: 'base URL printed in badge snippets', field: urlField() }),
  selfOtelEndpoint: o({
    name: 'SERVICE_SELF_OTEL_ENDPOINT',
    description: "OTLP/HTTP endpoint for the daemon's own metrics (JSON, POST <endpoint>/v1/metrics); unset: no export (GET /metrics still answers)",
    field: urlField(),
  }),
  selfOtelIntervalMs: d({
    name: 'SERVICE_SELF_OTEL_INTERVAL_MS',
    description: 'interval between OTLP metric exports (ms)',
    field: intField(100),
    default: 60_000,
  }),
  sqlEnabled: d({
    name: 'SERVICE_SQL_ENABLED',
    description: 'serve the read-only ClickHouse SQL endpoint at /clickhouse (docs/sql.md)',
    field: booleanField(),
    default: true,
  }),
  sqlPort: o({
    name: 'SERVICE_SQL_PORT',
    description: 'also serve the SQL endpoint at / on this port, for clients that want a ClickHouse root URL (listens on SERVICE_HOST)',
    field: intField(0, 65535),
  }),
  sqlMaxExecutionTime: d({ name: 'SERVICE_SQL_MAX_EXECUTION_TIME', description: 'seconds a SQL query may run (max_execution_time)', field: intField(1), default: 60 }),
  sqlMaxResultRows: d({
    name: 'SERVICE_SQL_MAX_RESULT_ROWS',
    description: 'rows a SQL query may return (max_result_rows); more fails the query',
    field: intField(1),
    default: 10_000_000,
  }),
  sqlMaxMemory: d({
    name: 'SERVICE_SQL_MAX_MEMORY',
    description: 'bytes of memory a SQL query may use (max_memory_usage)',
    field: intField(1_000_000),
    default: 1_073_741_824,
  }),
  sqlMaxThreads: d({
    name: 'SERVICE_SQL_MAX_THREADS',
    description: 'threads a SQL query may use (max_threads); low keeps cores for ingest',
    field: intField(1),
    default: 1,
  }),
  sqlMaxConcurrent: d({
    name: 'SERVICE_SQL_MAX_CONCURRENT',
    description: 'SQL queries running at once; more answer 429',
    field: intField(1),
    default: 2,
  }),
  dashboardEnabled: d({
    name: 'SERVICE_DASHBOARD_ENABLED',
    description: 'serve the dashboard at / and its sign-in routes (/v1/session); false leaves only the API',
    field: booleanField(),
    default: true,
  }),
  dashboardSessionTtlHours: d({
    name: 'SERVICE_DASHBOARD_SESSION_TTL_HOURS',
    description: 'hours a dashboard sign-in lasts before the token must be pasted again',
    field: intField(1, 8760),
    default: 12,
  }),
  // The door's defaults bound what strangers can make the server hold, far above what a CI fleet
  // needs: a reporter sends one batch per run, its headers in one packet and its body in well under
  // a second on a CI network.
  headersTimeout: d({
    name: 'SERVICE_HEADERS_TIMEOUT_MS',
    description: 'time to receive a request line and headers, and for a new connection to send them (ms); later: the connection is closed with 408 request_timeout',
    field: intField(10),
    default: 10_000,
  }),
  // 60 s takes an 8 MiB body (the raw cap) at 1.2 Mbit/s, far slower than a CI runner's link.
  requestTimeout: d({
    name: 'SERVICE_REQUEST_TIMEOUT_MS',
    description: 'time to receive a whole request, body included (ms); later: 408 request_timeout and the connection is closed; at least SERVICE_HEADERS_TIMEOUT_MS',
    field: intField(10),
    default: 60_000,
  }),
  // An open connection costs a socket and at most 16 KiB of header buffer: 1024 of them ≈ 20 MB.
  maxConnections: d({
    name: 'SERVICE_MAX_CONNECTIONS',
    description: 'open HTTP connections at once; more are answered 503 server_busy and closed',
    field: intField(1),
    default: 1024,
  }),
  // A quarter of the total: one address cannot take every connection, while a fleet behind one NAT
  // address still has room (each of its runners holds one connection while it reports).
  maxConnectionsPerAddress: d({
    name: 'SERVICE_MAX_CONNECTIONS_PER_ADDRESS',
    description: 'open HTTP connections from one remote address; more are answered 503 server_busy and closed',
    field: intField(1),
    default: 256,
  }),
  // A body being received holds at most 16 MiB (the inflated cap): 4 × 16 MiB = 64 MiB, plus one
  // body's decode copies at a time (decoding is synchronous), stays well under 150 MB of growth.
  // A CI-sized body (≤ 1 MiB) is read in milliseconds, so 4 slots take hundreds of batches a
  // second, far above the per-project rate limit (600 a minute); a burst waits SERVICE_BODY_WAIT_MS.
  maxConcurrentBodies: d({
    name: 'SERVICE_MAX_CONCURRENT_BODIES',
    description: 'request bodies received and decoded at once (each up to 16 MiB in memory); more wait SERVICE_BODY_WAIT_MS, then 503 server_busy; at most half of them (at least 1) for requests not authenticated from their headers',
    field: intField(1),
    default: 4,
  }),
  bodyWait: d({
    name: 'SERVICE_BODY_WAIT_MS',
    description: 'how long a request waits for its body to be read when SERVICE_MAX_CONCURRENT_BODIES are being read (ms); 0 answers 503 at once',
    field: intField(0),
    default: 2000,
  }),
  s3Bucket: o({ name: 'SERVICE_S3_BUCKET', description: 'artifact bucket; unset disables artifacts (presign answers 501)', field: stringField('a bucket name') }),
  s3Endpoint: o({
    name: 'SERVICE_S3_ENDPOINT',
    description: 'S3-compatible endpoint; upload URLs are signed against it; unset for AWS S3',
    field: urlField(),
  }),
  s3PublicEndpoint: o({
    name: 'SERVICE_S3_PUBLIC_ENDPOINT',
    description: 'browser-reachable endpoint download URLs are signed against; unset uses SERVICE_S3_ENDPOINT',
    field: urlField(),
  }),
  s3Region: d({ name: 'SERVICE_S3_REGION', description: 'bucket region', field: stringField('a region name'), default: 'us-east-1' }),
  s3AccessKeyId: o({ name: 'SERVICE_S3_ACCESS_KEY_ID', description: 'object-store access key; falls back to AWS_ACCESS_KEY_ID', field: stringField() }),
  s3SecretAccessKey: o({
    name: 'SERVICE_S3_SECRET_ACCESS_KEY',
    description: 'object-store secret key; falls back to AWS_SECRET_ACCESS_KEY',
    field: { ...stringField(), verbatim: true },
  }),
  s3ForcePathStyle: o({
    name: 'SERVICE_S3_FORCE_PATH_STYLE',
    description: 'path-style URLs (bucket in the path, as self-hosted stores want); default on when an endpoint is set',
    field: booleanField(),
  }),
};

/** Every variable loadServerSettings reads, in declaration order. */
export const SERVER_ENV_VARS: readonly ServerEnvVar[] = Object.values(VARS).map((spec: VarSpec<unknown>) =>
  spec.default === undefined
    ? { name: spec.name, description: spec.description }
    : { name: spec.name, description: spec.description, default: String(spec.default as string | number | boolean) },
);

/**
 * Reads and validates the daemon settings. All bad variables are reported together, each
 * named: `env: SERVICE_PORT: expected an integer 0..65535, got "x"`.
 */
export function loadServerSettings(env: NodeJS.ProcessEnv, cwd: string): ServerSettings {
  const errors: ConfigError[] = [];

  const readVar = envReader(env, errors);
  function opt<T>(spec: VarSpec<T>): T | undefined {
    return readVar(spec.name, spec.field) ?? spec.default;
  }
  function req<T>(spec: DefaultedSpec<T>): T {
    return opt(spec) ?? spec.default;
  }
  function s3Settings(): S3Settings | undefined {
    // Every S3 variable is checked even without a bucket, so a typo shows before it matters.
    const bucket = opt(VARS.s3Bucket);
    const endpoint = opt(VARS.s3Endpoint);
    const publicEndpoint = opt(VARS.s3PublicEndpoint);
    const region = req(VARS.s3Region);
    const forcePathStyle = opt(VARS.s3ForcePathStyle) ?? endpoint !== undefined;
    // The standard names are the fallback as a pair, so a key id never meets another source's secret.
    let creds = { id: opt(VARS.s3AccessKeyId), secret: opt(VARS.s3SecretAccessKey), session: undefined as string | undefined };
    if (creds.id === undefined && creds.secret === undefined) {
      creds = {
        id: opt({ ...VARS.s3AccessKeyId, name: 'AWS_ACCESS_KEY_ID' }),
        secret: opt({ ...VARS.s3SecretAccessKey, name: 'AWS_SECRET_ACCESS_KEY' }),
        session: opt({ ...VARS.s3SecretAccessKey, name: 'AWS_SESSION_TOKEN' }),
      };
    }
    if (bucket === undefined) return undefined;
    if ((creds.id === undefined) !== (creds.secret === undefined)) {
      const [id, secret] = [VARS.s3AccessKeyId.name, VARS.s3SecretAccessKey.name];
      const [missing, given] = creds.id === undefined ? [id, secret] : [secret, id];
      errors.push(new ConfigError('env', missing, `required when ${given} (or its AWS_ fallback) is set`));
    }
    return {
      bucket,
      endpoint,
      publicEndpoint,
      region,
      forcePathStyle,
      accessKeyId: creds.id,
      secretAccessKey: creds.secret,
      sessionToken: creds.session,
    };
  }

  const settings: ServerSettings = {
    port: req(VARS.port),
    host: req(VARS.host),
    dataDir: path.resolve(cwd, req(VARS.dataDir)),
    clickhouse: {
      url: opt(VARS.clickhouseUrl),
      user: opt(VARS.clickhouseUser),
      password: opt(VARS.clickhousePassword),
      database: req(VARS.clickhouseDatabase),
      cluster: opt(VARS.clickhouseCluster),
    },
    adminToken: opt(VARS.adminToken),
    agentToken: opt(VARS.agentToken),
    logLevel: req(VARS.logLevel),
    logRequests: req(VARS.logRequests),
    queue: {
      visibilityMs: req(VARS.visibilityMs),
      maxDepth: req(VARS.maxDepth),
      pollIntervalMs: req(VARS.pollIntervalMs),
      maxAttempts: req(VARS.maxAttempts),
      retryBackoffMs: req(VARS.retryBackoffMs),
      maxBytes: req(VARS.queueMaxBytes),
      url: opt(VARS.queueUrl),
      prefix: req(VARS.queuePrefix),
      partitions: req(VARS.queuePartitions),
      leaseTtlMs: req(VARS.partitionLeaseTtlMs),
      connectTimeoutMs: req(VARS.queueConnectTimeoutMs),
    },
    role: req(VARS.role),
    minFreeBytes: req(VARS.minFreeBytes),
    rateLimit: { max: req(VARS.rateLimitMax), windowMs: req(VARS.rateLimitWindowMs) },
    clusterThreshold: req(VARS.clusterThreshold),
    pipelineThread: req(VARS.pipelineThread),
    artifactRetentionDays: opt(VARS.artifactRetentionDays),
    executionRetentionDays: opt(VARS.executionRetentionDays),
    retentionSweepMs: req(VARS.retentionSweepMs),
    publicApiUrl: opt(VARS.publicApiUrl),
    selfOtelEndpoint: opt(VARS.selfOtelEndpoint),
    selfOtelIntervalMs: req(VARS.selfOtelIntervalMs),
    ...loadIntegrationSettings(env, errors),
    s3: s3Settings(),
    ai: loadAiSettings(env, errors),
    sql: {
      enabled: req(VARS.sqlEnabled),
      port: opt(VARS.sqlPort),
      maxExecutionTimeSec: req(VARS.sqlMaxExecutionTime),
      maxResultRows: req(VARS.sqlMaxResultRows),
      maxMemoryBytes: req(VARS.sqlMaxMemory),
      maxThreads: req(VARS.sqlMaxThreads),
      maxConcurrent: req(VARS.sqlMaxConcurrent),
    },
    dashboard: { enabled: req(VARS.dashboardEnabled), sessionTtlHours: req(VARS.dashboardSessionTtlHours) },
    door: {
      headersTimeoutMs: req(VARS.headersTimeout),
      requestTimeoutMs: req(VARS.requestTimeout),
      maxConnections: req(VARS.maxConnections),
      maxConnectionsPerAddress: req(VARS.maxConnectionsPerAddress),
      maxConcurrentBodies: req(VARS.maxConcurrentBodies),
      bodyWaitMs: req(VARS.bodyWait),
    },
  };
  // chDB is one process in this one: a cluster needs servers.
  if (settings.clickhouse.cluster !== undefined && settings.clickhouse.url === undefined) {
    errors.push(new ConfigError('env', VARS.clickhouseCluster.name, `requires ${VARS.clickhouseUrl.name} (a cluster is of ClickHouse servers; the embedded chDB is not one)`));
  }
  // Several processes share work only through a queue they all reach.
  if (settings.role !== 'all' && settings.queue.url === undefined) {
    errors.push(new ConfigError('env', VARS.queueUrl.name, `required with ${VARS.role.name}=${settings.role} (ingest and worker processes share the queue on NATS JetStream; README "Scaling out")`));
  }
  // Node refuses a header timeout longer than the whole request's.
  if (settings.door.headersTimeoutMs > settings.door.requestTimeoutMs) {
    errors.push(new ConfigError('env', VARS.headersTimeout.name, `must not exceed ${VARS.requestTimeout.name} (${settings.door.requestTimeoutMs})`));
  }
  throwConfigErrors(errors);
  return stripUndefined(settings);
}

/** Optional settings are absent rather than present-but-undefined, so logs/JSON stay tidy. */
function stripUndefined<T extends object>(obj: T): T {
  for (const [k, val] of Object.entries(obj)) {
    if (val === undefined) delete (obj as Record<string, unknown>)[k];
    else if (typeof val === 'object' && val !== null && !Array.isArray(val)) stripUndefined(val as object);
  }
  return obj;
}
