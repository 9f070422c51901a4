// The cap on bodies being received at once (src/api/body-slots.ts): first come, first served, a
// wait that ends in a refusal, and the anonymous share that strangers cannot exceed.
import { describe, expect, it } from 'vitest';
import { BodySlots } from '../../src/api/body-slots.js';

describe('BodySlots', () => {
  it('grants up to the cap, then queues in order and hands a freed slot to the first waiter', async () => {
    const slots = new BodySlots(2);
    const a = slots.claim(0, false);
    const b = slots.claim(0, false);
    expect([await a.granted, await b.granted]).toEqual([true, true]);
    const c = slots.claim(1000, false);
    const d = slots.claim(1000, false);
    a.release();
    expect(await c.granted).toBe(true);
    expect(slots.inUse).toBe(2);
    b.release();
    expect(await d.granted).toBe(true);
    // Releasing twice frees once.
    c.release();
    c.release();
    expect(slots.inUse).toBe(1);
  });

  it('refuses at once without a wait, and after the wait otherwise', async () => {
    const slots = new BodySlots(1);
    slots.claim(0, false);
    expect(await slots.claim(0, false).granted).toBe(false);
    const t0 = performance.now();
    expect(await slots.claim(50, false).granted).toBe(false);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(40);
  });

  it('a waiter that gives up (its client left) takes no slot later', async () => {
    const slots = new BodySlots(1);
    const held = slots.claim(0, false);
    const gone = slots.claim(1000, false);
    gone.release();
    expect(await gone.granted).toBe(false);
    held.release();
    expect(slots.inUse).toBe(0);
  });

  it('anonymous claims take at most half the slots; an authenticated waiter passes an anonymous one', async () => {
    const slots = new BodySlots(4);
    expect(slots.anonymousMax).toBe(2);
    const anon = [slots.claim(0, true), slots.claim(0, true)];
    expect(await Promise.all(anon.map((c) => c.granted))).toEqual([true, true]);
    expect(await slots.claim(0, true).granted).toBe(false);
    const auth = [slots.claim(0, false), slots.claim(0, false)];
    expect(await Promise.all(auth.map((c) => c.granted))).toEqual([true, true]);
    const anonWaiter = slots.claim(1000, true);
    const authWaiter = slots.claim(1000, false);
    auth[0]!.release();
    expect(await authWaiter.granted).toBe(true);
    anon[0]!.release();
    expect(await anonWaiter.granted).toBe(true);
    expect(new BodySlots(1).anonymousMax).toBe(1);
  });
});
