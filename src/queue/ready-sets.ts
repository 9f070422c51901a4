// What one partition of a queue keeps in memory between leases, for every backend: the embedded
// queue is one partition (jobs by id), the NATS queue has one per partition it owns (jobs by
// stream seq). Which lease comes next is decided here: a frozen lease due again first (its writes
// are keyed by its id and must finish), then groups that must run as they are (halves of a split
// lease, retries of a job that failed alone), then ready jobs oldest first up to the lease's limits.
// All of it re-forms from durable state after a restart or a change of owner.
import type { Delayed } from './failure-policy.js';

/** The next lease to hand out: a frozen lease by id, a group as it is, or ready jobs. */
export type NextLease<K> = { kind: 'frozen'; id: string } | { kind: 'group'; jobs: K[] } | { kind: 'ready'; jobs: K[] };

export class ReadySets<K> {
  /** Jobs ready to lease, oldest first (array + head index: taking from the front is O(1)). */
  private list: K[] = [];
  private head = 0;
  /** Halves of split leases and retries of single jobs: leased as they are, before `list`. */
  private groups: K[][] = [];
  /** Frozen lease ids ready for redelivery. */
  private frozen: string[] = [];
  private delayed: Delayed<K>[] = [];

  /** `order` sorts jobs oldest first (receipt order). */
  constructor(private readonly order: (a: K, b: K) => number) {}

  get readyCount(): number {
    return this.list.length - this.head;
  }

  /** Puts jobs (new, expired or never handed out) into the ready list, keeping it oldest first. */
  putReady(jobs: readonly K[]): void {
    if (jobs.length === 0) return;
    const add = jobs.length > 1 ? [...jobs].sort(this.order) : jobs;
    const first = this.list[this.head];
    const last = this.list[this.list.length - 1];
    if (first === undefined || last === undefined || this.order(add[0]!, last) > 0) {
      this.list.push(...add);
    } else if (this.order(add[add.length - 1]!, first) < 0) {
      // Older than everything ready (a lease that expired): in front, in the room the head left if any.
      if (this.head >= add.length) {
        this.head -= add.length;
        for (let i = 0; i < add.length; i++) this.list[this.head + i] = add[i]!;
      } else {
        this.list.splice(this.head, 0, ...add);
      }
    } else {
      this.list = [...this.list.slice(this.head), ...add].sort(this.order);
      this.head = 0;
    }
  }

  /** Removes one job from the ready list (it left by another way). */
  removeReady(job: K): void {
    const i = this.list.indexOf(job, this.head);
    if (i >= 0) this.list.splice(i, 1);
  }

  /** Groups to be leased as they are, before anything ready, in this order. */
  toFront(groups: K[][]): void {
    this.groups.unshift(...groups);
  }

  frozenReady(id: string): void {
    this.frozen.push(id);
  }

  /** A lease taken and not handed out after all: back where it was, ahead of the others. */
  untake(next: NextLease<K>): void {
    if (next.kind === 'frozen') this.frozen.unshift(next.id);
    else if (next.kind === 'group') this.groups.unshift(next.jobs);
    else this.putReady(next.jobs);
  }

  delay(d: Delayed<K>): void {
    this.delayed.push(d);
  }

  /** Moves backoffs that are due to the frozen and group lists. */
  promote(now: number): void {
    if (this.delayed.length === 0) return;
    const keep: Delayed<K>[] = [];
    for (const d of this.delayed) {
      if (d.availableAt > now) keep.push(d);
      else if (d.frozen) this.frozen.push(d.id);
      else this.groups.push(d.jobs);
    }
    this.delayed = keep;
  }

  /**
   * Takes the next lease: a frozen lease, else a group, else ready jobs oldest first, at most
   * `maxJobs` and, past the first job, at most `maxExecutions` executions. `executions` answers
   * undefined for a job that is gone (skipped).
   */
  take(opts: { maxJobs: number; maxExecutions: number }, executions: (job: K) => number | undefined): NextLease<K> | null {
    const id = this.frozen.shift();
    if (id !== undefined) return { kind: 'frozen', id };
    const group = this.groups.shift();
    if (group !== undefined) return { kind: 'group', jobs: group };
    const jobs: K[] = [];
    let total = 0;
    while (this.head < this.list.length && jobs.length < opts.maxJobs) {
      const job = this.list[this.head]!;
      const count = executions(job);
      if (count === undefined) {
        this.head++;
        continue;
      }
      if (jobs.length > 0 && total + count > opts.maxExecutions) break;
      this.head++;
      jobs.push(job);
      total += count;
    }
    this.compact();
    return jobs.length > 0 ? { kind: 'ready', jobs } : null;
  }

  /** A frozen lease or a group is waiting: it goes before anything ready. */
  hasFrozenOrGroup(): boolean {
    return this.groups.length > 0 || this.frozen.length > 0;
  }

  /** The oldest ready job (what partitions are compared by). */
  oldestReady(): K | undefined {
    return this.list[this.head];
  }

  /** Something can be leased now (backoffs not due do not count). */
  hasWork(): boolean {
    return this.head < this.list.length || this.groups.length > 0 || this.frozen.length > 0;
  }

  /** When the earliest backoff ends (Infinity when none waits). */
  nextDueAt(): number {
    let min = Number.POSITIVE_INFINITY;
    for (const d of this.delayed) min = Math.min(min, d.availableAt);
    return min;
  }

  /** Jobs waiting out a backoff; `frozenSize` counts a frozen lease's jobs. */
  delayedJobs(frozenSize: (leaseId: string) => number): number {
    let n = 0;
    for (const d of this.delayed) n += d.frozen ? frozenSize(d.id) : d.jobs.length;
    return n;
  }

  /** Every job not leased: ready, in groups, in frozen leases ready to run, and waiting out a backoff. */
  pendingJobs(frozenSize: (leaseId: string) => number): number {
    let n = this.readyCount + this.delayedJobs(frozenSize);
    for (const g of this.groups) n += g.length;
    for (const id of this.frozen) n += frozenSize(id);
    return n;
  }

  private compact(): void {
    if (this.head > 4096 && this.head * 2 > this.list.length) {
      this.list = this.list.slice(this.head);
      this.head = 0;
    }
  }
}
