// The order check of an executions pipeline: every stage's `requires` must be filled in by the
// receivers or an earlier processor (src/pipeline/component.ts `Slot`). Without it a pipeline
// missing `identity` validates and then stores nothing; with it the file is refused with the path
// and what to add or move, before anything starts.
import type { Slot } from './component.js';
import type { Registry } from './registry.js';
import { ASSEMBLED } from './stages/assemble.js';

/** A processor or exporter of the pipeline, where it is listed and what it declares. */
export interface SlotStage {
  id: string;
  role: 'processors' | 'exporters';
  index: number;
  requires: readonly Slot[];
  provides: readonly Slot[];
}

/**
 * What every receiver of the executions signal hands the pipeline: the decoded jobs and their runs.
 * Receivers only enqueue; it is the runtime's assembly stage (./stages/assemble.ts) that builds
 * these from a lease before the first processor, so the slots are its declaration.
 */
export const RECEIVED: readonly Slot[] = ASSEMBLED;

/**
 * Problems of one executions pipeline (`base`: `service.pipelines.<id>`), processors in their
 * order, then exporters (which run after every processor); `received`: what the pipeline is
 * handed (a pipeline fed by a routing connector may also be handed executions). Three kinds:
 * - a slot nothing in the pipeline provides: the processors list is missing a stage;
 * - a slot a later processor provides: the requiring processor must move after it;
 * - a slot a processor rewrites after an earlier one read it (and did not rewrite it too): the
 *   earlier one saw stale data.
 */
export function checkSlots(base: string, stages: readonly SlotStage[], registry: Registry, received: Iterable<Slot> = RECEIVED): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  const processors = stages.filter((s) => s.role === 'processors');
  const firstProvider = new Map<Slot, SlotStage>();
  for (const p of processors) for (const slot of p.provides) if (!firstProvider.has(slot)) firstProvider.set(slot, p);

  const filled = new Set<Slot>(received);
  const readers = new Map<Slot, SlotStage[]>();
  const missing = new Map<Slot, SlotStage[]>();
  const ordered = [...processors, ...stages.filter((s) => s.role === 'exporters')];
  for (const stage of ordered) {
    for (const slot of stage.requires) {
      if (filled.has(slot)) {
        // A stage that rewrites the slot it reads (normalize, then a filter) only hands it on: a
        // later rewrite refines its work rather than making it stale.
        if (!stage.provides.includes(slot)) readers.set(slot, [...(readers.get(slot) ?? []), stage]);
        continue;
      }
      const later = firstProvider.get(slot);
      if (later) {
        // Only a processor can be here: exporters come after every processor.
        problems.push({
          path: `${base}.${stage.role}.${stage.index}`,
          message: `${stage.id} requires ${slot}, which ${at(later)} provides later: move ${later.id} before ${stage.id}`,
        });
      } else {
        missing.set(slot, [...(missing.get(slot) ?? []), stage]);
      }
    }
    if (stage.role !== 'processors') continue;
    for (const slot of stage.provides) {
      const stale = readers.get(slot) ?? [];
      if (stale.length > 0) {
        problems.push({
          path: `${base}.processors.${stage.index}`,
          message: `${stage.id} rewrites ${slot} after ${list(stale.map(at))} read it: move ${stage.id} before ${stale[0]!.id}`,
        });
      }
      filled.add(slot);
    }
  }
  problems.push(...missingProblems(base, missing, registry));
  return problems;
}

/** One problem per stage to add (slots with the same providers together), on the processors list. */
function missingProblems(base: string, missing: Map<Slot, SlotStage[]>, registry: Registry): { path: string; message: string }[] {
  const groups = new Map<string, { providers: string[]; clauses: string[] }>();
  for (const [slot, stages] of missing) {
    const providers = registry.providersOf(slot);
    const key = providers.join(',');
    const group = groups.get(key) ?? { providers, clauses: [] };
    group.clauses.push(`${list(stages.map(at))} ${stages.length === 1 ? 'requires' : 'require'} ${slot}`);
    groups.set(key, group);
  }
  return [...groups.values()].map(({ providers, clauses }) => {
    const who = providers.join(' or ');
    return {
      path: `${base}.processors`,
      message: providers.length > 0 ? `${who} is missing: ${clauses.join(', ')}, which ${who} provides` : `no registered processor provides it: ${clauses.join(', ')}`,
    };
  });
}

function at(stage: SlotStage): string {
  return `${stage.id} (${stage.role}.${stage.index})`;
}

function list(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}
