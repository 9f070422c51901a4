// A cap on request bodies being received and decoded at once (docs/api.md "Limits at the door"):
// each may hold up to 16 MiB, so the cap bounds what bodies in progress can take in memory. A
// request beyond it waits briefly for a slot (a burst of CI runs finishing together), then is
// answered 503 server_busy without its body being read.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors } from '../errors.js';

export interface BodySlotLimits {
  max: number;
  waitMs: number;
}

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

/** Whether a request announces a body (Content-Length > 0, or chunked). */
export function declaresBody(headers: FastifyRequest['headers']): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
}

/**
 * Takes a slot before fastify reads a body (preParsing, after the route's authentication in
 * onRequest) and frees it once the body is decoded (preValidation) or the answer is over.
 */
export function registerBodySlots(fastify: FastifyInstance, limits: BodySlotLimits, authenticated: (request: FastifyRequest) => boolean): BodySlots {
  const slots = new BodySlots(limits.max);
  const claims = new WeakMap<FastifyRequest, SlotClaim>();
  fastify.addHook('preParsing', async (request, reply, payload) => {
    // A gone client has no body to read; fastify ends the request.
    if (!declaresBody(request.headers) || request.raw.socket?.destroyed) return payload;
    const claim = slots.claim(limits.waitMs, !authenticated(request));
    claims.set(request, claim);
    // 'close' comes when the answer is sent or the connection is gone, whatever happened meanwhile.
    reply.raw.once('close', claim.release);
    if (!(await claim.granted)) throw errors.serverBusy(`too many request bodies are being received at once (at most ${limits.max})`);
    return payload;
  });
  fastify.addHook('preValidation', async (request) => {
    claims.get(request)?.release();
  });
  return slots;
}
