// Every stream, subject, bucket and consumer name the NATS queue uses, derived from one prefix so
// that a queue reopened with the same prefix finds its streams again, and two queues with
// different prefixes share a server without seeing each other.

export interface NatsNames {
  prefix: string;
  jobsStream: string;
  /** Subject of one partition's jobs. */
  jobsSubject(partition: number): string;
  /** All partitions' jobs (the jobs stream's subject filter, and the work-arrival subscription). */
  jobsWildcard: string;
  /** Doorbell of one partition: a tiny core message after each publish of a job (wakes its owner's waitForWork). */
  workSubject(partition: number): string;
  workWildcard: string;
  /** The durable pull consumer of one partition. */
  consumer(partition: number): string;
  deadStream: string;
  deadSubject: string;
  outboxStream: string;
  outboxSubject: string;
  receiptsBucket: string;
  plansBucket: string;
  attemptsBucket: string;
  cursorsBucket: string;
  leasesBucket: string;
}

/** Stream and bucket names take [A-Za-z0-9_-]; anything else becomes '_'. */
export function sanitizePrefix(raw: string): string {
  const clean = raw.replace(/[^A-Za-z0-9_-]/g, '_');
  if (clean.length === 0) throw new Error('NATS queue prefix is empty');
  return clean;
}

export function natsNames(rawPrefix: string): NatsNames {
  const p = sanitizePrefix(rawPrefix);
  return {
    prefix: p,
    jobsStream: `${p}_JOBS`,
    jobsSubject: (partition) => `${p}.jobs.${partition}`,
    jobsWildcard: `${p}.jobs.*`,
    workSubject: (partition) => `${p}.work.${partition}`,
    workWildcard: `${p}.work.*`,
    consumer: (partition) => `${p}_jobs_${partition}`,
    deadStream: `${p}_DEAD`,
    deadSubject: `${p}.dead`,
    outboxStream: `${p}_OUTBOX`,
    outboxSubject: `${p}.outbox`,
    receiptsBucket: `${p}_receipts`,
    plansBucket: `${p}_plans`,
    attemptsBucket: `${p}_attempts`,
    cursorsBucket: `${p}_cursors`,
    leasesBucket: `${p}_leases`,
  };
}

/** KV keys take [-/_=.a-zA-Z0-9]: other keys (subscriber names) are hex-encoded. */
export function kvSafeKey(raw: string): string {
  return /^[-/_=a-zA-Z0-9]+$/.test(raw) ? raw : `x${Buffer.from(raw, 'utf8').toString('hex')}`;
}
