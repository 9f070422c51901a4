// The `routing` connector's decision (src/connectors/routing.ts), after the Collector's routing
// connector: a table of routes, each a match and the pipelines it sends to; a run goes to the
// pipelines of the FIRST route it matches (as the Collector's connector does since `match_once`
// became the only behaviour), else to `default_pipelines`. The unit routed is a whole run (one
// job): splitting a run's executions between pipelines would store the same run twice with
// partial counts.
import type { BatchResource, CiProvider, IngestBatch, IngestSource, Trigger } from '../../client/src/contract/batch.js';
import { compileTextPattern } from './patterns.js';

/** One pattern, or a list of patterns any of which may match. */
export type Patterns = string | readonly string[];

export interface RouteMatch {
  /** The project id (exact, wildcard or /regex/). */
  project?: Patterns;
  /** Which receiver type the run came through. */
  source?: readonly IngestSource[];
  branch?: Patterns;
  repository?: Patterns;
  ciProvider?: readonly CiProvider[];
  trigger?: readonly Trigger[];
  /** Attribute key → pattern: the run matches when, for every key, one of its executions carries a matching value. */
  attributes?: Readonly<Record<string, string>>;
}

export interface RouteConfig {
  match: RouteMatch;
  pipelines: readonly string[];
}

export interface RoutingConfig {
  default_pipelines: readonly string[];
  table: readonly RouteConfig[];
}

/** What a route is matched against: one job of a lease. */
export interface RoutedRun {
  projectId: string;
  source: IngestSource;
  batch: Pick<IngestBatch, 'resource' | 'executions'>;
}

type Check = (run: RoutedRun) => boolean;

function text(pattern: Patterns | undefined, get: (r: RoutedRun) => string | undefined): Check | undefined {
  if (pattern === undefined) return undefined;
  const matchers = (typeof pattern === 'string' ? [pattern] : pattern).map((p) => compileTextPattern(p));
  return (r) => {
    const v = get(r);
    return v !== undefined && matchers.some((m) => m(v));
  };
}

function oneOf<V>(values: readonly V[] | undefined, get: (r: RoutedRun) => V): Check | undefined {
  if (values === undefined) return undefined;
  const set = new Set(values);
  return (r) => set.has(get(r));
}

const resource = (r: RoutedRun): BatchResource => r.batch.resource;

function compileMatch(match: RouteMatch): Check {
  const attributeChecks = Object.entries(match.attributes ?? {}).map(([key, pattern]): Check => {
    const m = compileTextPattern(pattern);
    return (r) =>
      r.batch.executions.some((e) => {
        const v = e.attributes?.[key];
        return v !== undefined && m(String(v));
      });
  });
  const checks = [
    text(match.project, (r) => r.projectId),
    oneOf(match.source, (r) => r.source),
    text(match.branch, (r) => resource(r).branch),
    text(match.repository, (r) => resource(r).repository),
    oneOf(match.ciProvider, (r) => resource(r).ciProvider),
    oneOf(match.trigger, (r) => resource(r).trigger),
    ...attributeChecks,
  ].filter((c): c is Check => c !== undefined);
  return (r) => checks.every((c) => c(r));
}

/** The pipelines a run goes to. Compiles the table once; throws on a pattern that does not compile. */
export function compileRoutes(config: RoutingConfig): (run: RoutedRun) => readonly string[] {
  const routes = config.table.map((route) => ({ matches: compileMatch(route.match), pipelines: route.pipelines }));
  return (run) => routes.find((r) => r.matches(run))?.pipelines ?? config.default_pipelines;
}

/** Every pipeline a routing table can send to, with where it is named (for the graph's checks). */
export function routeTargets(config: RoutingConfig): { path: string; pipeline: string }[] {
  return [
    ...config.default_pipelines.map((pipeline, i) => ({ path: `default_pipelines.${i}`, pipeline })),
    ...config.table.flatMap((route, r) => route.pipelines.map((pipeline, i) => ({ path: `table.${r}.pipelines.${i}`, pipeline }))),
  ];
}
