// The HTTP thread's turns for ingest work (src/ingest/turns.ts): at once while a pass of the event
// loop has budget, in order in later passes once it has spent it. A pass is counted by a chain of
// setImmediate callbacks: one runs in each pass's check phase, where a turn ends.
import { describe, expect, it } from 'vitest';
import { IngestTurns } from '../../src/ingest/turns.js';

/** Counts passes of the event loop until stopped: `passes` is the number of check phases run since. */
function passCounter(): { readonly passes: number; stop(): void } {
  let passes = 0;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    passes++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return {
    get passes() {
      return passes;
    },
    stop: () => void (stopped = true),
  };
}

async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

describe('IngestTurns', () => {
  it('grants at once, without a pass of the loop, while the turn has budget and nobody waits', async () => {
    const clock = { now: 0 };
    const turns = new IngestTurns(2, () => clock.now);
    const counter = passCounter();
    const granted: number[] = [];
    for (const i of [0, 1, 2]) void turns.take().then(() => granted.push(i));
    await flushMicrotasks();
    expect(granted).toEqual([0, 1, 2]);
    expect(counter.passes).toBe(0);
    counter.stop();
  });

  it('once a pass has spent its budget, later requests wait for a later pass, in order', async () => {
    const clock = { now: 0 };
    const turns = new IngestTurns(2, () => clock.now);
    await turns.take(); // opens the turn at 0
    const counter = passCounter();
    clock.now = 2; // the budget is spent
    const grants: { who: string; pass: number }[] = [];
    const all = ['a', 'b'].map((who) => turns.take().then(() => grants.push({ who, pass: counter.passes })));
    await flushMicrotasks();
    expect(grants).toEqual([]);
    expect(turns.waitingCount).toBe(2);
    await Promise.all(all);
    // Not in the pass that spent the budget (its check phase is pass 0 → 1): in the one after.
    expect(grants).toEqual([
      { who: 'a', pass: 1 },
      { who: 'b', pass: 1 },
    ]);
    counter.stop();
  });

  it('a turn grants the waiting until its budget is spent; the rest go a pass later, and newcomers queue behind them', async () => {
    const clock = { now: 0 };
    const turns = new IngestTurns(2, () => clock.now);
    await turns.take();
    const counter = passCounter();
    clock.now = 5;
    const grants: { who: string; pass: number }[] = [];
    // Each granted request's synchronous work takes 1 ms of the clock.
    const request = (who: string) =>
      turns.take().then(() => {
        grants.push({ who, pass: counter.passes });
        clock.now += 1;
      });
    const waiting = ['w1', 'w2', 'w3', 'w4'].map(request);
    await waiting[0];
    // A request that comes while others wait queues behind them, even with the clock's budget unspent.
    const late = request('late');
    await Promise.all([...waiting, late]);
    expect(grants).toEqual([
      { who: 'w1', pass: 1 },
      { who: 'w2', pass: 1 },
      { who: 'w3', pass: 2 },
      { who: 'w4', pass: 2 },
      { who: 'late', pass: 3 },
    ]);
    counter.stop();
  });

  it('a quiet thread grants at once again once nobody waits, whatever the last turn spent', async () => {
    const clock = { now: 0 };
    const turns = new IngestTurns(2, () => clock.now);
    await turns.take();
    clock.now = 10;
    await Promise.all([turns.take(), turns.take()]); // waited for a later pass
    expect(turns.waitingCount).toBe(0);
    // Let the turn end, as a quiet loop does.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    clock.now = 100;
    const counter = passCounter();
    let granted = false;
    void turns.take().then(() => (granted = true));
    await flushMicrotasks();
    expect(granted).toBe(true);
    expect(counter.passes).toBe(0);
    counter.stop();
  });
});
