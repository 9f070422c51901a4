// Layered configuration, pure (docs/architecture.md "Configuration"): defaults < service.yml < project settings
// (dashboard) < environment, per key; nested objects merge deep, arrays and scalars replace.
// One exception, from docs/architecture.md "Configuration" (retention): a project's retention overrides the global
// `SERVICE_*_RETENTION_DAYS` defaults, so under `retention.` settings win over the environment.
// Every leaf of the result carries the layer it came from, for `flakehouse config --json` and the
// settings API.

export type ConfigSource = 'default' | 'file' | 'settings' | 'env';
export type PlainObject = Record<string, unknown>;

export type ConfigLayers = Record<ConfigSource, PlainObject>;

export interface LayeredValue {
  value: PlainObject;
  /** Leaf key path ('flaky.threshold'; arrays are leaves) → the layer its value came from. */
  sources: Record<string, ConfigSource>;
}

/** Lowest first. */
export const DEFAULT_PRECEDENCE: readonly ConfigSource[] = ['default', 'file', 'settings', 'env'];

/** Key prefixes whose layers rank differently (a project's retention beats the global env default). */
export const PRECEDENCE_EXCEPTIONS: readonly { prefix: string; order: readonly ConfigSource[] }[] = [
  { prefix: 'retention', order: ['default', 'file', 'env', 'settings'] },
];

export function isPlainObject(value: unknown): value is PlainObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Nested objects merge; arrays and scalars from `over` replace; undefined leaves `base` as is. */
export function deepMerge(base: PlainObject, over: PlainObject): PlainObject {
  const out: PlainObject = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    const prev = out[k];
    out[k] = isPlainObject(prev) && isPlainObject(v) ? deepMerge(prev, v) : v;
  }
  return out;
}

/**
 * A PATCH: nested objects merge, arrays and scalars replace, and `null` removes the key (a blank
 * field in the dashboard inherits from the layers below).
 */
export function applyPatch(base: PlainObject, patch: PlainObject): PlainObject {
  const out: PlainObject = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (v === null) {
      delete out[k];
      continue;
    }
    const prev = out[k];
    if (isPlainObject(v)) {
      const merged = applyPatch(isPlainObject(prev) ? prev : {}, v);
      if (Object.keys(merged).length > 0) out[k] = merged;
      else delete out[k];
    } else out[k] = v;
  }
  return out;
}

/** `null` means unset, like an absent key (YAML `key:` with no value, a blank dashboard field). */
export function dropNulls(value: unknown): unknown {
  if (!isPlainObject(value)) return value;
  const out: PlainObject = {};
  for (const [k, v] of Object.entries(value)) if (v !== null) out[k] = dropNulls(v);
  return out;
}

export function getPath(obj: unknown, dotted: string): unknown {
  let cur = obj;
  for (const key of dotted.split('.')) {
    if (!isPlainObject(cur) || !Object.hasOwn(cur, key)) return undefined;
    cur = cur[key];
  }
  return cur;
}

export function setPath(obj: PlainObject, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  const last = keys.pop();
  if (last === undefined) return;
  let cur = obj;
  for (const key of keys) {
    const next = cur[key];
    if (isPlainObject(next)) cur = next;
    else cur = cur[key] = {};
  }
  cur[last] = value;
}

export function leafPaths(obj: PlainObject, prefix = ''): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(obj)) {
    if (v === undefined) continue;
    const p = prefix ? `${prefix}.${k}` : k;
    if (isPlainObject(v)) out.push(...leafPaths(v, p));
    else out.push(p);
  }
  return out;
}

function precedenceOf(path: string): readonly ConfigSource[] {
  for (const e of PRECEDENCE_EXCEPTIONS) if (path === e.prefix || path.startsWith(`${e.prefix}.`)) return e.order;
  return DEFAULT_PRECEDENCE;
}

function mergeIn(order: readonly ConfigSource[], layers: ConfigLayers): PlainObject {
  return order.reduce<PlainObject>((acc, source) => deepMerge(acc, layers[source]), {});
}

/**
 * Merges the four layers and names each leaf's source. Layers must already be validated and free
 * of nulls; the result is plain data for the caller to parse into its typed shape.
 */
export function resolveLayers(layers: ConfigLayers): LayeredValue {
  const value = mergeIn(DEFAULT_PRECEDENCE, layers);
  for (const e of PRECEDENCE_EXCEPTIONS) {
    const sub = getPath(mergeIn(e.order, layers), e.prefix);
    if (sub !== undefined) setPath(value, e.prefix, sub);
  }
  const sources: Record<string, ConfigSource> = {};
  for (const p of leafPaths(value)) {
    const order = precedenceOf(p);
    let source: ConfigSource = 'default';
    for (let i = order.length - 1; i >= 0; i--) {
      const s = order[i]!;
      if (getPath(layers[s], p) !== undefined) {
        source = s;
        break;
      }
    }
    sources[p] = source;
  }
  return { value, sources };
}
