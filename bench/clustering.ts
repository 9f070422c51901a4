// `npm run bench -- clustering [--signatures 1000000] [--families 100000] [--queries 10000] [--threshold 0.5] [--hashes 128] [--seed 1]`
//
// Error-signature clustering at scale, in this process (pure logic, no storage):
//  - errorSignature/s and MinHash sketches/s (target ≥ 20,000 sketches/s of ~50 tokens, one core),
//  - a streaming build of N distinct signatures from synthetic families of similar failures: each
//    signature is looked up in the LSH index, assigned with bestCluster (or starts a cluster) and
//    added, as the worker does; precision/recall of those assignments against the families,
//  - at 10k / 100k / 1M indexed: p50/p99 candidate-lookup time and the average candidate count for
//    fresh queries (flat in N = sub-linear search), plus bestCluster precision/recall for them,
//  - agreement of LSH + bestCluster with an exact linear scan over all sketches, and its cost.
import { cpus } from 'node:os';
import { seededRandom as rng } from '../src/domain/random.js';
import { writeResult } from './results.js';
import { parseArgs } from 'node:util';
import { errorSignature } from '../src/domain/signature.js';
import { LshIndex, MinHasher, bestCluster, estimateJaccard, lshCollisionProbability, lshParams } from '../src/domain/minhash.js';

const PROJECT = '00000000-0000-4000-8000-000000000001';


const COMMON = (
  'expected to be equal received the of in not a an is was but got value element should have been timeout ' +
  'waiting for visible enabled undefined null cannot read property call function request response status ' +
  'failed error connection refused returned length array object string number true false with from at'
).split(' ');
const TYPES = ['AssertionError', 'TypeError', 'TimeoutError', 'Error', 'ReferenceError', 'RangeError', 'SyntaxError', 'ValueError', 'KeyError', 'java.lang.AssertionError', 'org.opentest4j.AssertionFailedError', 'NullPointerException'];

interface Family {
  type: string;
  words: string[];
  /** Positions in `words` where a dynamic value (number, id, timestamp, temp path, duration) goes. */
  slots: { at: number; kind: number }[];
  frames: { fn: string; file: string }[];
}

/** Synthetic failures: families share a template; members differ in a few words, a frame, the dynamic values. */
class Generator {
  private readonly rand: () => number;
  private readonly vocab: string[];
  private readonly sharedFrames: { fn: string; file: string }[];

  constructor(seed: number) {
    this.rand = rng(seed);
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    this.vocab = Array.from({ length: 6000 }, () => Array.from({ length: 3 + Math.floor(this.rand() * 8) }, () => letters[Math.floor(this.rand() * 26)]).join(''));
    this.sharedFrames = Array.from({ length: 300 }, () => this.frame());
  }

  private pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rand() * xs.length)]!;
  }

  private word(): string {
    return this.rand() < 0.35 ? this.pick(COMMON) : this.pick(this.vocab);
  }

  private frame(): { fn: string; file: string } {
    return { fn: `${this.pick(this.vocab)}${this.rand() < 0.5 ? `.${this.pick(this.vocab)}` : ''}`, file: `src/${this.pick(this.vocab)}/${this.pick(this.vocab)}.ts` };
  }

  family(): Family {
    const words = Array.from({ length: 14 + Math.floor(this.rand() * 9) }, () => this.word());
    const frames = Array.from({ length: 3 + Math.floor(this.rand() * 3) }, () => (this.rand() < 0.3 ? this.pick(this.sharedFrames) : this.frame()));
    const slots = Array.from({ length: 1 + Math.floor(this.rand() * 3) }, () => ({ at: Math.floor(this.rand() * words.length), kind: Math.floor(this.rand() * 5) }));
    return { type: this.pick(TYPES), words, slots, frames };
  }

  /**
   * One distinct signature of the family's failure, as a reporter would send it: the template's
   * dynamic slots get fresh values (which normalisation must remove), and the text drifts a little
   * (a reworded word, an extra clause, another or a missing frame) the way failures of one cause do.
   */
  member(f: Family): { type: string; message: string; stack: string } {
    const r = this.rand;
    const words = f.words.map((w) => (r() < 0.05 ? this.word() : w));
    const dyn = (kind: number): string => {
      switch (kind) {
        case 0:
          return `${Math.floor(r() * 1e6)}`;
        case 1:
          return `${Math.floor(r() * 0xffffffff).toString(16).padStart(8, '0')}a1`;
        case 2:
          return new Date(1_700_000_000_000 + Math.floor(r() * 1e10)).toISOString();
        case 3:
          return `/tmp/run-${Math.floor(r() * 1e9).toString(36)}/out.json`;
        default:
          return `${Math.floor(r() * 30_000)}ms`;
      }
    };
    for (const slot of f.slots) words[slot.at] = dyn(slot.kind);
    if (r() < 0.3) words.push(...Array.from({ length: 2 + Math.floor(r() * 3) }, () => this.word()));
    let frames = f.frames.slice();
    if (r() < 0.25) frames[Math.floor(r() * frames.length)] = this.frame();
    if (r() < 0.15 && frames.length > 2) frames = frames.slice(0, -1);
    const stack = [
      `${f.type}: ${words.slice(0, 4).join(' ')}`,
      ...frames.map((fr) => `    at ${fr.fn} (/home/runner/work/app/app/${fr.file}:${1 + Math.floor(r() * 400)}:${1 + Math.floor(r() * 40)})`),
      `    at Promise.then.completed (/home/runner/work/app/app/node_modules/jest-circus/build/utils.js:298:28)`,
      `    at processTicksAndRejections (node:internal/process/task_queues:95:5)`,
    ].join('\n');
    return { type: f.type, message: words.join(' '), stack };
  }
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

function ratio(a: number, b: number): number {
  return b === 0 ? 0 : round(a / b, 4);
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      signatures: { type: 'string', default: '1000000' },
      families: { type: 'string', default: '100000' },
      queries: { type: 'string', default: '10000' },
      threshold: { type: 'string', default: '0.5' },
      'exact-queries': { type: 'string', default: '50' },
      seed: { type: 'string', default: '1' },
      hashes: { type: 'string', default: '128' },
    },
  });
  const total = Number(values.signatures);
  const familyCount = Number(values.families);
  const queryCount = Number(values.queries);
  const threshold = Number(values.threshold);
  const exactQueries = Number(values['exact-queries']);
  const gen = new Generator(Number(values.seed));
  const rand = rng(Number(values.seed) ^ 0x9e3779b9);
  const hasher = new MinHasher(Number(values.hashes));
  const k = hasher.numHashes;
  const { bands, rows } = lshParams(threshold, k);
  console.log(`clustering bench: ${total} signatures in ~${familyCount} families, threshold ${threshold} → ${bands} bands × ${rows} rows`);

  // ── Throughput: errorSignature and sketching on ~50-token signatures ──────────────────────────
  const sampleFamilies = Array.from({ length: 2000 }, () => gen.family());
  const sampleErrors = Array.from({ length: 20_000 }, (_, i) => gen.member(sampleFamilies[i % sampleFamilies.length]!));
  let sigRate = 0;
  let tokenSets: string[][] = [];
  for (let round_ = 0; round_ < 3; round_++) {
    const t0 = performance.now();
    tokenSets = sampleErrors.map((e) => errorSignature(PROJECT, e).tokens);
    sigRate = Math.max(sigRate, sampleErrors.length / ((performance.now() - t0) / 1000));
  }
  const sketchRates: number[] = [];
  for (let round_ = 0; round_ < 5; round_++) {
    const t0 = performance.now();
    for (const t of tokenSets) hasher.sketch(t);
    sketchRates.push(tokenSets.length / ((performance.now() - t0) / 1000));
  }
  sketchRates.sort((a, b) => a - b);
  const avgTokens = tokenSets.reduce((s, t) => s + t.length, 0) / tokenSets.length;

  // ── Families: sizes 1 + geometric (mean ≈ total / families, capped), shuffled arrival order ──
  const families: Family[] = [];
  const familyOfSig = new Int32Array(total);
  {
    const mean = Math.max(1, total / familyCount);
    const p = 1 / mean;
    let n = 0;
    const order: number[] = [];
    while (n < total) {
      const f = families.length;
      families.push(gen.family());
      let size = 1;
      while (rand() > p && size < mean * 10) size++;
      size = Math.min(size, total - n);
      for (let i = 0; i < size; i++) order.push(f);
      n += size;
    }
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    familyOfSig.set(order);
  }

  // ── Streaming build: lookup → bestCluster → add, as the worker does ──────────────────────────
  const sketches = new Uint32Array(total * k);
  const clusterOfSig = new Int32Array(total);
  const clusterFamily: number[] = []; // founding family of each cluster
  const familySeen = new Uint8Array(families.length);
  const index = new LshIndex(bands, total);
  const seen = new Set<string>();
  const stream = { joins: 0, correctJoins: 0, joinable: 0, newFamilyStarts: 0, newFamily: 0, duplicatesSkipped: 0 };
  const checkpoints: Record<string, unknown>[] = [];
  const checkpointAt = new Set([10_000, 100_000, 1_000_000, total].filter((c) => c <= total));
  const sketchOf = (i: number): Uint32Array => sketches.subarray(i * k, (i + 1) * k);
  const candidatesFor = (ids: Set<string>) => {
    const out: { id: string; clusterId: string; sketch: Uint32Array }[] = [];
    for (const id of ids) {
      const i = Number(id);
      out.push({ id, clusterId: String(clusterOfSig[i]!), sketch: sketchOf(i) });
    }
    return out;
  };

  /** Fresh queries against the current index (not added): lookup latency, candidates, accuracy. */
  function measure(indexed: number, queries: number): Record<string, unknown> {
    const lookupMs: number[] = [];
    const assignMs: number[] = [];
    let cands = 0;
    let foreign = 0;
    let maxCands = 0;
    const acc = { joins: 0, correctJoins: 0, joinable: 0, novel: 0, novelCorrect: 0 };
    for (let q = 0; q < queries; q++) {
      const novel = rand() < 0.1;
      const famIdx = novel ? -1 : familyOfSig[Math.floor(rand() * indexed)]!;
      const fam = novel ? gen.family() : families[famIdx]!;
      const sk = hasher.sketch(errorSignature(PROJECT, gen.member(fam)).tokens);
      const t0 = performance.now();
      const ids = index.candidates(sk);
      const t1 = performance.now();
      const best = bestCluster(sk, candidatesFor(ids), threshold);
      const t2 = performance.now();
      lookupMs.push(t1 - t0);
      assignMs.push(t2 - t0);
      cands += ids.size;
      for (const id of ids) if (familyOfSig[Number(id)] !== famIdx) foreign++;
      maxCands = Math.max(maxCands, ids.size);
      if (novel) {
        acc.novel++;
        if (best === null) acc.novelCorrect++;
        else acc.joins++;
      } else {
        acc.joinable++;
        if (best !== null) {
          acc.joins++;
          if (clusterFamily[Number(best.clusterId)] === famIdx) acc.correctJoins++;
        }
      }
    }
    lookupMs.sort((a, b) => a - b);
    assignMs.sort((a, b) => a - b);
    return {
      indexed,
      queries,
      lookupMs: { p50: round(percentile(lookupMs, 50), 4), p99: round(percentile(lookupMs, 99), 4), max: round(lookupMs[lookupMs.length - 1] ?? 0, 3) },
      lookupPlusBestClusterMs: { p50: round(percentile(assignMs, 50), 4), p99: round(percentile(assignMs, 99), 4) },
      avgCandidates: round(cands / queries, 2),
      avgCandidatesFromOtherFamilies: round(foreign / queries, 2),
      maxCandidates: maxCands,
      bestCluster: {
        precision: ratio(acc.correctJoins, acc.joins),
        recall: ratio(acc.correctJoins, acc.joinable),
        newFamiliesStartNewCluster: ratio(acc.novelCorrect, acc.novel),
      },
    };
  }

  const buildStart = performance.now();
  const phase = { generate: 0, errorSignature: 0, sketch: 0, lookupAssignAdd: 0, checkpoints: 0 };
  for (let i = 0; i < total; i++) {
    const fam = familyOfSig[i]!;
    let sig;
    // Storage keeps one row per signature hash: regenerate until this one is new.
    for (let tries = 0; ; tries++) {
      const g0 = performance.now();
      const err = gen.member(families[fam]!);
      const g1 = performance.now();
      sig = errorSignature(PROJECT, err);
      phase.generate += g1 - g0;
      phase.errorSignature += performance.now() - g1;
      if (!seen.has(sig.hash) || tries >= 20) break;
      stream.duplicatesSkipped++;
    }
    seen.add(sig.hash);
    const s0 = performance.now();
    const sk = hasher.sketch(sig.tokens);
    sketches.set(sk, i * k);
    const t0 = performance.now();
    phase.sketch += t0 - s0;
    const best = bestCluster(sk, candidatesFor(index.candidates(sk)), threshold);
    let cluster: number;
    if (best === null) {
      cluster = clusterFamily.length;
      clusterFamily.push(fam);
    } else {
      cluster = Number(best.clusterId);
    }
    clusterOfSig[i] = cluster;
    index.add(String(i), sk);
    phase.lookupAssignAdd += performance.now() - t0;
    if (familySeen[fam]) {
      stream.joinable++;
      if (best !== null) {
        stream.joins++;
        if (clusterFamily[cluster] === fam) stream.correctJoins++;
      }
    } else {
      familySeen[fam] = 1;
      stream.newFamily++;
      if (best === null) stream.newFamilyStarts++;
      else stream.joins++;
    }
    const n = i + 1;
    if (checkpointAt.has(n)) {
      const c0 = performance.now();
      const cp = measure(n, Math.min(queryCount, Math.max(1000, Math.floor(queryCount / (n < total ? 5 : 1)))));
      phase.checkpoints += performance.now() - c0;
      checkpoints.push(cp);
      console.log(JSON.stringify(cp));
    }
    if (n % 100_000 === 0) console.log(`  ${n} indexed, ${clusterFamily.length} clusters, ${round((performance.now() - buildStart) / 1000, 1)}s`);
  }
  const buildSeconds = (performance.now() - buildStart) / 1000;

  // ── Exact linear scan for a few queries: what LSH could miss, and what it saves ─────────────
  let agree = 0;
  const scanMs: number[] = [];
  const lshMs: number[] = [];
  for (let q = 0; q < exactQueries; q++) {
    const fam = families[familyOfSig[Math.floor(rand() * total)]!]!;
    const sk = hasher.sketch(errorSignature(PROJECT, gen.member(fam)).tokens);
    const t0 = performance.now();
    const viaLsh = bestCluster(sk, candidatesFor(index.candidates(sk)), threshold);
    const t1 = performance.now();
    let bestSim = -1;
    let bestCl = -1;
    for (let i = 0; i < total; i++) {
      const s = estimateJaccard(sk, sketchOf(i));
      if (s > bestSim || (s === bestSim && String(clusterOfSig[i]) < String(bestCl))) {
        bestSim = s;
        bestCl = clusterOfSig[i]!;
      }
    }
    const t2 = performance.now();
    lshMs.push(t1 - t0);
    scanMs.push(t2 - t1);
    const exact = bestSim > threshold ? String(bestCl) : null;
    if ((viaLsh?.clusterId ?? null) === exact) agree++;
  }
  scanMs.sort((a, b) => a - b);
  lshMs.sort((a, b) => a - b);

  const rss = process.memoryUsage().rss;
  const curve = Object.fromEntries([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9].map((s) => [String(s), round(lshCollisionProbability(s, bands, rows), 3)]));
  const result = {
    bench: 'clustering',
    at: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version, note: 'single thread, pure logic (no storage)' },
    params: { signatures: total, families: families.length, queriesAtFinalCheckpoint: queryCount, threshold, numHashes: k, bands, rows, seed: Number(values.seed) },
    throughput: {
      errorSignaturesPerSec: Math.round(sigRate),
      sketchesPerSec: { median: Math.round(sketchRates[2]!), best: Math.round(sketchRates[4]!) },
      avgTokensPerSignature: round(avgTokens, 1),
    },
    lshCollisionProbability: curve,
    build: {
      seconds: round(buildSeconds, 1),
      secondsBy: Object.fromEntries(Object.entries(phase).map(([name, ms]) => [name, round(ms / 1000, 1)])),
      clusters: clusterFamily.length,
      familiesSeen: stream.newFamily,
      duplicateHashesRegenerated: stream.duplicatesSkipped,
      streamingAssignment: {
        precision: ratio(stream.correctJoins, stream.joins),
        recall: ratio(stream.correctJoins, stream.joinable),
        newFamiliesStartNewCluster: ratio(stream.newFamilyStarts, stream.newFamily),
      },
    },
    checkpoints,
    exactScanComparison: {
      queries: exactQueries,
      lshAgreesWithExactScan: ratio(agree, exactQueries),
      linearScanMs: { p50: round(percentile(scanMs, 50), 2), p99: round(percentile(scanMs, 99), 2) },
      lshLookupPlusBestClusterMs: { p50: round(percentile(lshMs, 50), 4), p99: round(percentile(lshMs, 99), 4) },
    },
    rssMb: round(rss / 1024 / 1024),
    targets: { sketchesPerSec: 20_000 },
  };
  console.log(JSON.stringify(result, null, 2));
  console.log(`written ${writeResult('clustering', result)}`);
  return 0;
}
