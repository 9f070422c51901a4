// A cap on request bodies being received and decoded at once (docs/api.md "Limits at the door"),
// one budget for every protocol: an HTTP request body and an OTLP/gRPC message each take a slot
// before a byte of them is read. Each may hold up to 16 MiB, so the cap bounds what bodies in
// progress can take in memory. A request beyond it waits briefly for a slot (a burst of CI runs
// finishing together), then is refused (503 server_busy; gRPC: RESOURCE_EXHAUSTED with RetryInfo)
// without its body being read.

interface Waiter {
  anonymous: boolean;
  grant(): void;
  timer?: NodeJS.Timeout;
}

/** A claim on one slot: `granted` says whether it got one; release() frees it, or gives up waiting. */
export interface SlotClaim {
  granted: Promise<boolean>;
  release: () => void;
}

export class BodySlots {
  private used = 0;
  private anonymousUsed = 0;
  private readonly waiters: Waiter[] = [];
  /**
   * Requests not authenticated from their headers (sign-in, procedures, unknown paths) get at most
   * half the slots, so strangers cannot take the ones authenticated ingest needs.
   */
  readonly anonymousMax: number;

  constructor(readonly max: number) {
    this.anonymousMax = Math.max(1, Math.floor(max / 2));
  }

  get inUse(): number {
    return this.used;
  }

  claim(waitMs: number, anonymous: boolean): SlotClaim {
    let state: 'waiting' | 'held' | 'done' = 'waiting';
    let resolve!: (granted: boolean) => void;
    const granted = new Promise<boolean>((r) => (resolve = r));
    const waiter: Waiter = {
      anonymous,
      grant: () => {
        clearTimeout(waiter.timer);
        state = 'held';
        this.used++;
        if (anonymous) this.anonymousUsed++;
        resolve(true);
      },
    };
    const giveUp = () => {
      this.withdraw(waiter);
      state = 'done';
      resolve(false);
    };
    if (this.fits(waiter)) waiter.grant();
    else if (waitMs <= 0) giveUp();
    else {
      this.waiters.push(waiter);
      waiter.timer = setTimeout(giveUp, waitMs);
    }
    return {
      granted,
      release: () => {
        if (state === 'waiting') giveUp();
        if (state !== 'held') return;
        state = 'done';
        this.used--;
        if (anonymous) this.anonymousUsed--;
        this.next();
      },
    };
  }

  private fits(w: Waiter): boolean {
    return this.used < this.max && (!w.anonymous || this.anonymousUsed < this.anonymousMax);
  }

  private withdraw(w: Waiter): void {
    clearTimeout(w.timer);
    const i = this.waiters.indexOf(w);
    if (i >= 0) this.waiters.splice(i, 1);
  }

  /** First come, first served, skipping anonymous waiters while their share is taken. */
  private next(): void {
    for (let i = 0; i < this.waiters.length && this.used < this.max; ) {
      const w = this.waiters[i]!;
      if (!this.fits(w)) {
        i++;
        continue;
      }
      this.waiters.splice(i, 1);
      w.grant();
    }
  }
}
