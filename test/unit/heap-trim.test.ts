import v8 from 'node:v8';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, HeapTrimmer, exposeGc, limitHeapGrowth, nextTrimAt, type HeapAccess } from '../../src/pipeline/thread/heap-trim.js';

const MB = 1024 * 1024;

/** A heap whose use the test sets, and which a collection brings down to what is live. */
function fakeHeap(): HeapAccess & { used: number; live: number; at: number; collected: number } {
  const h = {
    used: 0,
    live: 0,
    at: 0,
    collected: 0,
    usedBytes: () => h.used,
    collect: () => {
      h.collected++;
      h.used = h.live;
    },
    now: () => h.at,
  };
  return h;
}

describe('heap trim', () => {
  const policy = { floorBytes: 100 * MB, growth: 2, minGapMs: 1_000 };

  it('collects once the heap passes the floor, then at twice what was live', () => {
    const heap = fakeHeap();
    const trimmer = new HeapTrimmer(heap, policy);
    heap.used = 99 * MB;
    trimmer.check();
    expect(heap.collected).toBe(0);

    heap.used = 120 * MB;
    heap.live = 80 * MB;
    trimmer.check();
    expect(heap.collected).toBe(1);
    expect(heap.used).toBe(80 * MB);

    // Next due at 160 MB (2 x 80 live), not at the floor.
    heap.at += 5_000;
    heap.used = 150 * MB;
    trimmer.check();
    expect(heap.collected).toBe(1);
    heap.used = 170 * MB;
    trimmer.check();
    expect(heap.collected).toBe(2);
  });

  it('never collects twice within the minimum gap, however full the heap', () => {
    const heap = fakeHeap();
    const trimmer = new HeapTrimmer(heap, policy);
    heap.used = 500 * MB;
    trimmer.check();
    heap.used = 500 * MB;
    heap.at += 999;
    trimmer.check();
    expect(heap.collected).toBe(1);
    heap.at += 1;
    trimmer.check();
    expect(heap.collected).toBe(2);
  });

  describe('while the thread is quiet', () => {
    const quietPolicy = { ...policy, quiet: { floorBytes: 40 * MB, growth: 1.5, maxUtilization: 0.3, checks: 4 } };

    /** 90 MB used, 30 live: under the usual floor, over the quiet one. `tick` is one 250 ms check at a utilization. */
    function setup(): { heap: ReturnType<typeof fakeHeap> & { busy: number }; trimmer: HeapTrimmer; tick: (busy: number) => void } {
      const heap = Object.assign(fakeHeap(), { busy: 0, used: 90 * MB, live: 30 * MB });
      const trimmer = new HeapTrimmer(Object.assign(heap, { utilization: () => heap.busy }), quietPolicy);
      const tick = (busy: number) => {
        heap.busy = busy;
        heap.at += 250;
        trimmer.check();
      };
      return { heap, trimmer, tick };
    }

    it('collects from the lower floor once the loop has been quiet for the checks in a row, not before', () => {
      const { heap, trimmer, tick } = setup();
      for (let i = 0; i < 3; i++) tick(0.1);
      expect(heap.collected).toBe(0);
      tick(0.1);
      expect(heap.collected).toBe(1);
      expect(trimmer.quietCollections).toBe(1);
      // Next quiet collection at 1.5 x the 30 MB live: 45 MB.
      heap.at += 5_000;
      heap.used = 44 * MB;
      for (let i = 0; i < 4; i++) tick(0.1);
      expect(heap.collected).toBe(1);
      heap.used = 46 * MB;
      tick(0.1);
      expect(heap.collected).toBe(2);
    });

    it('never collects below the usual floor while the loop is busy, and one busy check starts the count again', () => {
      const { heap, trimmer, tick } = setup();
      for (let i = 0; i < 20; i++) tick(0.9);
      expect(heap.collected).toBe(0);
      for (const busy of [0.1, 0.1, 0.1, 0.5, 0.1, 0.1, 0.1]) tick(busy);
      expect(heap.collected).toBe(0);
      tick(0.1);
      expect(heap.collected).toBe(1);
      // Under load the usual floor still applies.
      heap.at += 5_000;
      heap.used = 120 * MB;
      tick(0.9);
      expect(heap.collected).toBe(2);
      expect(trimmer.quietCollections).toBe(1);
    });
  });

  it('keeps the floor when little is live', () => {
    expect(nextTrimAt(10 * MB, policy)).toBe(100 * MB);
    expect(nextTrimAt(70 * MB, policy)).toBe(140 * MB);
  });

  it("exposes V8's collection without --expose-gc: garbage no longer counted after it", () => {
    const gc = exposeGc();
    let junk: { i: number; s: string }[] | null = Array.from({ length: 200_000 }, (_, i) => ({ i, s: `garbage-${i}` }));
    const withJunk = v8.getHeapStatistics().used_heap_size;
    expect(junk.length).toBe(200_000);
    junk = null;
    gc();
    expect(v8.getHeapStatistics().used_heap_size).toBeLessThan(withJunk - 5 * MB);
  });

  describe('heap growth', () => {
    const source = fileURLToPath(new URL('../../src/pipeline/thread/heap-trim.ts', import.meta.url));
    /**
     * A child process that keeps ~20 MB live and makes garbage until V8 has run several full
     * collections, printing the factor of each new limit (`--trace-gc-verbose`); `limit` says
     * whether it calls limitHeapGrowth first.
     */
    async function growthFactors(limit: boolean): Promise<string[]> {
      const script = [
        `const { limitHeapGrowth } = await import(${JSON.stringify(source)});`,
        limit ? 'limitHeapGrowth([]);' : '',
        "const live = Array.from({ length: 200_000 }, (_, i) => ({ i, s: 'live-' + i }));",
        "let junk; for (let r = 0; r < 10; r++) junk = Array.from({ length: 200_000 }, (_, i) => ({ i, s: 'junk-' + i }));",
        'console.log(live.length + junk.length);',
      ].join('\n');
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--trace-gc-verbose', '--input-type=module', '-e', script], {
        maxBuffer: 64 * 1024 * 1024,
      });
      expect(stdout).toContain('400000');
      // Node 20's V8 prints the factor it applied after each new limit, "Limit: … (1.5)", and its
      // own choice on the line before; Node 24's prints the applied one there, "factor 1.5 based on …".
      const applied = [...stdout.matchAll(/\[HeapController\] Limit: .*\(([\d.]+)\)$/gm)].map((m) => m[1]!);
      return applied.length > 0 ? applied : [...stdout.matchAll(/\[HeapController\] factor ([\d.]+) based on/gm)].map((m) => m[1]!);
    }

    it('makes V8 set every new limit at 1.5x what was live, where it chose its own factor before', async () => {
      const limited = await growthFactors(true);
      expect(limited.length).toBeGreaterThan(0);
      expect(new Set(limited)).toEqual(new Set([String(1 + HEAP_GROWING_PERCENT / 100)]));
      const own = await growthFactors(false);
      expect(own.length).toBeGreaterThan(0);
      expect(own.some((f) => f !== '1.5')).toBe(true);
    }, 60_000);

    it("keeps the operator's own --heap-growing-percent", () => {
      expect(limitHeapGrowth(['--max-old-space-size=4096', '--heap-growing-percent=20'])).toBeUndefined();
      expect(limitHeapGrowth(['--heap_growing_percent=30'])).toBeUndefined();
    });
  });
});
