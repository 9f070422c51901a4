// The token snapshot: ingest processes hold no storage, so the workers publish every live token's
// SHA-256 with its project and scopes to a JetStream KV bucket, and ingest processes authenticate
// from a watched copy of it. A token created or revoked on a worker is republished at once (a
// revocation reaches every ingest process within the watch's delivery, well under a second on one
// network); a periodic full resync covers changes made by another worker on the same store.
import type { KV, KvEntry } from 'nats';
import type { Logger } from 'pino';
import type { Scope, TokenPrincipal } from '../store/projects.js';

/** What the publisher reads: the live tokens, and a signal when they change in this process. */
export interface TokenSource {
  livePrincipals(): Promise<{ hash: string; principal: TokenPrincipal }[]>;
  onTokensChanged(listener: () => void): () => void;
}

/** The KV value under a token's hash. */
interface SnapshotValue {
  tokenId: string;
  projectId: string;
  scopes: Scope[];
}

const encoder = new TextEncoder();

export function snapshotBucketName(prefix: string): string {
  return `${prefix}_tokens`;
}

/** The worker's side: writes the live tokens to the bucket and removes the revoked ones. */
export class TokenSnapshotPublisher {
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private running: Promise<void> = Promise.resolve();
  private again = false;

  constructor(
    private readonly kv: KV,
    private readonly source: TokenSource,
    private readonly opts: { resyncMs?: number; logger?: Logger } = {},
  ) {}

  async start(): Promise<void> {
    await this.publish();
    this.unsubscribe = this.source.onTokensChanged(() => void this.schedule());
    this.timer = setInterval(() => void this.schedule(), this.opts.resyncMs ?? 30_000);
    this.timer.unref();
  }

  /** One full resync at a time; a change during one runs another after it. */
  schedule(): Promise<void> {
    if (this.again) return this.running;
    this.again = true;
    this.running = this.running.then(async () => {
      this.again = false;
      try {
        await this.publish();
      } catch (err) {
        this.opts.logger?.warn({ err }, 'token snapshot: publish failed, retried at the next change or resync');
      }
    });
    return this.running;
  }

  private async publish(): Promise<void> {
    const live = await this.source.livePrincipals();
    const keep = new Set<string>();
    for (const { hash, principal } of live) {
      keep.add(hash);
      const value: SnapshotValue = { tokenId: principal.tokenId, projectId: principal.projectId, scopes: principal.scopes };
      const bytes = encoder.encode(JSON.stringify(value));
      const current = await this.kv.get(hash);
      if (current && current.operation === 'PUT' && Buffer.from(current.value).equals(Buffer.from(bytes))) continue;
      await this.kv.put(hash, bytes);
    }
    for await (const key of await this.kv.keys()) {
      if (!keep.has(key)) await this.kv.delete(key);
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
    await this.running;
  }
}

/** The ingest process's side: a live map of hash → principal, kept by a KV watch. */
export class TokenSnapshot {
  private readonly principals = new Map<string, TokenPrincipal>();
  private watch: { stop(): void } | undefined;

  constructor(private readonly kv: KV, private readonly logger?: Logger) {}

  /** Resolves once the bucket's current values are loaded. */
  async start(): Promise<void> {
    let ready!: () => void;
    const loaded = new Promise<void>((r) => (ready = r));
    const iter = await this.kv.watch({ initializedFn: () => ready() });
    this.watch = iter;
    void (async () => {
      try {
        for await (const entry of iter) this.apply(entry);
      } catch (err) {
        this.logger?.error({ err }, 'token snapshot: watch ended');
      }
    })();
    await loaded;
  }

  private apply(entry: KvEntry): void {
    if (entry.operation !== 'PUT') {
      this.principals.delete(entry.key);
      return;
    }
    try {
      const v = entry.json<SnapshotValue>();
      this.principals.set(entry.key, { tokenId: v.tokenId, projectId: v.projectId, scopes: v.scopes });
    } catch (err) {
      this.logger?.warn({ err, key: entry.key }, 'token snapshot: unreadable entry ignored');
    }
  }

  /** The principal of the token with this SHA-256, or undefined (unknown or revoked). */
  byHash(hash: string): TokenPrincipal | undefined {
    return this.principals.get(hash);
  }

  get size(): number {
    return this.principals.size;
  }

  stop(): void {
    this.watch?.stop();
  }
}
