// The `attributes` processor's actions (src/processors/attributes.ts), after the Collector's
// attributes processor, on execution attributes, in the order given: set, rename, hash (sha256
// hex of the value's text), delete, and map (a CI's own attribute into a field of the batch's
// resource, e.g. `ci.pipeline.id` → `resource.ciRunId`).
import {
  CI_PROVIDERS,
  PLACEHOLDER_BRANCH,
  PLACEHOLDER_COMMIT,
  TRIGGERS,
  type AttributeValue,
  type BatchResource,
  type ExecutionInput,
} from '../../client/src/contract/batch.js';
import { sha256Hex } from '../../client/src/contract/ids.js';

/** Resource fields a mapping may fill: every optional or placeholder field of the canonical resource. */
export const RESOURCE_TARGETS = [
  'resource.ciRunId',
  'resource.ciJobUrl',
  'resource.ciProvider',
  'resource.commitSha',
  'resource.branch',
  'resource.baseBranch',
  'resource.mergeBase',
  'resource.prNumber',
  'resource.trigger',
  'resource.shardIndex',
  'resource.shardTotal',
  'resource.repository',
] as const;
export type ResourceTarget = (typeof RESOURCE_TARGETS)[number];

export type AttributeAction =
  | { action: 'set'; key: string; value: AttributeValue }
  | { action: 'rename'; from: string; to: string }
  | { action: 'hash'; key: string }
  | { action: 'delete'; key: string }
  /** `overwrite` false (the default): only when the resource has no value, or the receiver's placeholder. */
  | { action: 'map'; from: string; to: ResourceTarget; overwrite?: boolean };

/** Applies the attribute actions to one execution, in place (the worker owns the decoded batch). */
export function applyAttributeActions(e: ExecutionInput, actions: readonly AttributeAction[]): void {
  for (const a of actions) {
    switch (a.action) {
      case 'set':
        (e.attributes ??= {})[a.key] = a.value;
        break;
      case 'rename': {
        const v = e.attributes?.[a.from];
        if (v === undefined || a.from === a.to) break;
        delete e.attributes![a.from];
        e.attributes![a.to] = v;
        break;
      }
      case 'hash': {
        const v = e.attributes?.[a.key];
        if (v !== undefined) e.attributes![a.key] = sha256Hex(String(v));
        break;
      }
      case 'delete':
        if (e.attributes) delete e.attributes[a.key];
        break;
      case 'map':
        break; // per batch: mapResource
    }
  }
  if (e.attributes && Object.keys(e.attributes).length === 0) delete e.attributes;
}

type Coerced = Partial<Record<keyof BatchResource, string | number>>;
const HEX_COMMIT = /^[0-9a-f]{7,40}$/;

/**
 * An attribute value as the resource field's type, or undefined when it does not fit (the field is
 * then left as it is): the same constraints the native receiver puts on the resource, so a mapped
 * value is as storable as a sent one.
 */
export function coerceResourceValue(field: keyof BatchResource, value: AttributeValue): string | number | undefined {
  const text = String(value).trim();
  const int = (min: number): number | undefined => {
    const n = typeof value === 'number' ? value : /^\d+$/.test(text) ? Number(text) : NaN;
    return Number.isSafeInteger(n) && n >= min && n <= 0xffff_ffff ? n : undefined;
  };
  switch (field) {
    case 'prNumber':
    case 'shardIndex':
    case 'shardTotal': {
      const n = int(1);
      return n !== undefined && (field === 'prNumber' || n <= 0xffff) ? n : undefined;
    }
    case 'commitSha':
    case 'mergeBase':
      return HEX_COMMIT.test(text.toLowerCase()) ? text.toLowerCase() : undefined;
    case 'ciProvider':
      return (CI_PROVIDERS as readonly string[]).includes(text) ? text : undefined;
    case 'trigger':
      return (TRIGGERS as readonly string[]).includes(text) ? text : undefined;
    case 'repository':
      return /^[^/\s]+\/[^/\s]+$/.test(text) ? text : undefined;
    default:
      return text === '' ? undefined : text;
  }
}

/** Whether the resource's field carries no real value: absent, empty, or the receiver's placeholder. */
function isUnset(resource: BatchResource, field: keyof BatchResource): boolean {
  const v = resource[field];
  if (v === undefined || v === '') return true;
  if (field === 'branch') return v === PLACEHOLDER_BRANCH;
  if (field === 'commitSha') return v === PLACEHOLDER_COMMIT;
  if (field === 'ciProvider' || field === 'trigger') return v === 'other';
  return false;
}

/**
 * The resource with the `map` actions applied, reading each attribute from the first execution
 * that carries it (a CI's run-level attribute is the same on every execution of the batch).
 * Returns the same object when nothing changes. Run before the other actions touch the executions,
 * so a mapping reads the attribute as the CI sent it (a later delete or hash does not hide it).
 */
export function mapResource(resource: BatchResource, executions: readonly ExecutionInput[], actions: readonly AttributeAction[]): BatchResource {
  const updates: Coerced = {};
  for (const a of actions) {
    if (a.action !== 'map') continue;
    const field = a.to.slice('resource.'.length) as keyof BatchResource;
    // Without overwrite the first mapping that finds a value wins: a list of fallbacks (one key per CI).
    if (a.overwrite !== true && (field in updates || !isUnset(resource, field))) continue;
    const carrier = executions.find((e) => e.attributes?.[a.from] !== undefined);
    if (!carrier) continue;
    const v = coerceResourceValue(field, carrier.attributes![a.from]!);
    if (v !== undefined) updates[field] = v;
  }
  return Object.keys(updates).length === 0 ? resource : ({ ...resource, ...updates } as BatchResource);
}
