// Configuration errors. Every problem names where it came from (a file path or 'env') and the
// offending key path or variable, so an operator can fix it without reading our source:
//   service.yml: flaky.treshold: unknown key
//   env: SERVICE_FLAKY_THRESHOLD: expected a number between 0 and 1, got "abc"
import type { z } from 'zod';

export class ConfigError extends Error {
  override readonly name: string = 'ConfigError';
  /** The problem without the `source: path: ` prefix. */
  readonly detail: string;

  constructor(
    readonly source: string,
    readonly path: string,
    message: string,
  ) {
    super(path ? `${source}: ${path}: ${message}` : `${source}: ${message}`);
    this.detail = message;
  }
}

/**
 * Several problems at once: operators fix a whole config in one go instead of one error per
 * restart. Extends ConfigError (source/path of the first problem) so a single
 * `instanceof ConfigError` check handles both; `.message` has one line per problem.
 */
export class AggregateConfigError extends ConfigError {
  override readonly name: string = 'AggregateConfigError';

  constructor(readonly errors: readonly ConfigError[]) {
    const first = errors[0];
    if (!first) throw new TypeError('AggregateConfigError needs at least one error');
    super(first.source, first.path, first.detail);
    this.message = errors.map((e) => e.message).join('\n');
  }
}

/** Throws the single error, or an AggregateConfigError when there are several; no-op for none. */
export function throwConfigErrors(errors: readonly ConfigError[]): void {
  if (errors.length === 0) return;
  if (errors.length === 1 && errors[0]) throw errors[0];
  throw new AggregateConfigError(errors);
}

/** 'a.b.0' (the wire format for issue paths, docs/contract.md §5). */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.map((p) => String(p)).join('.');
}

/** A short rendering of a bad value for messages: strings quoted, containers summarised. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  }
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value);
  }
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return typeof value;
}

/**
 * A zod error-map producing `expected <what>, got <value>`. Passed as a schema's `error`
 * parameter it also covers that schema's checks (min/max/int), so one phrase describes
 * every way the value can be wrong.
 */
export function expected(what: string): (issue: { input?: unknown }) => string {
  return (issue) =>
    issue.input === undefined ? `required: expected ${what}` : `expected ${what}, got ${describeValue(issue.input)}`;
}

export interface PathMessage {
  path: string;
  message: string;
}

/**
 * Flattens zod issues into path-naming messages. Unrecognized keys (strict objects) become one
 * entry per key with the key appended to the path, since "flaky: Unrecognized key" makes the
 * reader hunt for it. Accepts `(error)` or `(source, error)`; `source` is not repeated in the
 * messages (callers prefix it, see formatZodIssues).
 */
export function zodIssuesToMessages(error: z.ZodError): PathMessage[];
export function zodIssuesToMessages(source: string, error: z.ZodError): PathMessage[];
export function zodIssuesToMessages(a: string | z.ZodError, b?: z.ZodError): PathMessage[] {
  const error = typeof a === 'string' ? b : a;
  if (!error) return [];
  const out: PathMessage[] = [];
  const seen = new Set<string>();
  const push = (path: string, message: string): void => {
    const key = `${path}\u0000${message}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ path, message });
  };
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) push(formatPath([...issue.path, key]), 'unknown key');
    } else {
      push(formatPath(issue.path), issue.message);
    }
  }
  return out;
}

/** zod issues as ConfigErrors attributed to `source` (a file path, 'env' or 'settings'). */
export function formatZodIssues(source: string, error: z.ZodError): ConfigError[] {
  return zodIssuesToMessages(error).map((m) => new ConfigError(source, m.path, m.message));
}

/** `flakehouse config --project`: the project's settings could not be read (the CLI's config command). */
export class ProjectSettingsError extends Error {}
