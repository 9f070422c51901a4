// The `filter` processor's decisions (src/processors/filter.ts), after the Collector's filter
// processor: rules match executions (or whole runs); `include`, when given, keeps only what matches
// one of its rules, then `exclude` drops what matches one of its rules. Within a rule every field
// given must match (and); a list of rules matches when one does (or). Patterns: ./patterns.ts.
import type { BatchResource, CiProvider, ExecutionInput, TestStatus, Trigger } from '../../client/src/contract/batch.js';
import { compileFilePattern, compileTextPattern, type TextMatcher } from './patterns.js';

export interface ExecutionRule {
  /** The test file (an `ignore` glob or `/…/flags`). */
  file?: string;
  suite?: string;
  title?: string;
  /** The execution's own status (one attempt), any of these. */
  status?: readonly TestStatus[];
  /** The run's branch. */
  branch?: string;
  /** Attribute key → pattern of its value (numbers and booleans as their text); a missing attribute never matches. */
  attributes?: Readonly<Record<string, string>>;
}

export interface RunRule {
  branch?: string;
  repository?: string;
  ciProvider?: readonly CiProvider[];
  trigger?: readonly Trigger[];
}

export interface RuleSet<R> {
  include?: readonly R[];
  exclude?: readonly R[];
}

export interface FilterConfig {
  executions?: RuleSet<ExecutionRule>;
  runs?: RuleSet<RunRule>;
}

export interface CompiledFilter {
  /** Whether the whole run (this batch) is dropped. */
  dropsRun(resource: BatchResource): boolean;
  /** Whether an execution of a kept run stays. */
  keepsExecution(e: ExecutionInput, resource: BatchResource): boolean;
  /** False when the config has no execution rules: the processor skips the per-execution walk. */
  readonly filtersExecutions: boolean;
}

type Predicate<T> = (subject: T) => boolean;

/** Every optional matcher that is present must accept (and); a rule without fields is refused by the schema. */
function all<T>(checks: (Predicate<T> | undefined)[]): Predicate<T> {
  const present = checks.filter((c): c is Predicate<T> => c !== undefined);
  return (s) => present.every((c) => c(s));
}

function text<T>(pattern: string | undefined, compile: (p: string) => TextMatcher, get: (s: T) => string | undefined): Predicate<T> | undefined {
  if (pattern === undefined) return undefined;
  const m = compile(pattern);
  return (s) => {
    const v = get(s);
    return v !== undefined && m(v);
  };
}

function oneOf<T, V>(values: readonly V[] | undefined, get: (s: T) => V): Predicate<T> | undefined {
  if (values === undefined) return undefined;
  const set = new Set(values);
  return (s) => set.has(get(s));
}

interface ExecutionSubject {
  e: ExecutionInput;
  resource: BatchResource;
}

function compileExecutionRule(rule: ExecutionRule): Predicate<ExecutionSubject> {
  const attributeChecks = Object.entries(rule.attributes ?? {}).map(([key, pattern]) =>
    text<ExecutionSubject>(pattern, compileTextPattern, (s) => {
      const v = s.e.attributes?.[key];
      return v === undefined ? undefined : String(v);
    }),
  );
  return all<ExecutionSubject>([
    text(rule.file, compileFilePattern, (s) => s.e.filePath),
    text(rule.suite, compileTextPattern, (s) => s.e.suite),
    text(rule.title, compileTextPattern, (s) => s.e.title),
    oneOf(rule.status, (s) => s.e.status),
    text(rule.branch, compileTextPattern, (s) => s.resource.branch),
    ...attributeChecks,
  ]);
}

function compileRunRule(rule: RunRule): Predicate<BatchResource> {
  return all<BatchResource>([
    text(rule.branch, compileTextPattern, (r) => r.branch),
    text(rule.repository, compileTextPattern, (r) => r.repository),
    oneOf(rule.ciProvider, (r) => r.ciProvider),
    oneOf(rule.trigger, (r) => r.trigger),
  ]);
}

/** Kept: matches an include rule (or there are none), and no exclude rule. */
function compileRuleSet<R, T>(set: RuleSet<R> | undefined, compileRule: (r: R) => Predicate<T>): Predicate<T> | undefined {
  const include = (set?.include ?? []).map(compileRule);
  const exclude = (set?.exclude ?? []).map(compileRule);
  if (include.length === 0 && exclude.length === 0) return undefined;
  return (s) => (include.length === 0 || include.some((r) => r(s))) && !exclude.some((r) => r(s));
}

/** Compiles the rules once; throws on a pattern that does not compile (the config schema checks them first). */
export function compileFilter(config: FilterConfig): CompiledFilter {
  const keepRun = compileRuleSet(config.runs, compileRunRule);
  const keepExecution = compileRuleSet(config.executions, compileExecutionRule);
  return {
    dropsRun: (resource) => keepRun !== undefined && !keepRun(resource),
    keepsExecution: (e, resource) => keepExecution === undefined || keepExecution({ e, resource }),
    filtersExecutions: keepExecution !== undefined,
  };
}
