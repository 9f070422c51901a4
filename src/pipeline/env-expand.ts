// `${env:NAME}` in a pipeline file, as the OpenTelemetry Collector expands it: the same file runs
// in every environment and secrets or per-host values stay out of it. Expanded in the parsed
// values (never in keys), before validation, so a bad value is reported at its path like any other.
import { parse } from 'yaml';

/** `$${` is a literal `${`; `${env:NAME}` and `${env:NAME:-default}` are references. */
const REFERENCE = /\$\$\{|\$\{env:([^}]*)\}/g;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface ExpandProblem {
  path: string;
  message: string;
}

/**
 * A copy of `value` with every reference in its strings replaced. A string that is one reference
 * and nothing else takes the variable's YAML type when it is a number or a boolean
 * (`concurrency: ${env:NOTIFY_CONCURRENCY}` is a number), as in the Collector; elsewhere the text
 * is spliced in. The default is used when the variable is unset or empty.
 */
export function expandEnv(value: unknown, env: NodeJS.ProcessEnv, problems: ExpandProblem[], path = ''): unknown {
  if (typeof value === 'string') return expandString(value, env, problems, path);
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, env, problems, join(path, String(i))));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expandEnv(v, env, problems, join(path, k))]));
  }
  return value;
}

function expandString(text: string, env: NodeJS.ProcessEnv, problems: ExpandProblem[], path: string): unknown {
  if (!text.includes('${')) return text;
  let whole: string | undefined;
  const out = text.replace(REFERENCE, (match: string, body: string | undefined, offset: number) => {
    if (body === undefined) return '${';
    const cut = body.indexOf(':-');
    const name = cut === -1 ? body : body.slice(0, cut);
    const fallback = cut === -1 ? undefined : body.slice(cut + 2);
    if (!NAME.test(name)) {
      problems.push({ path: path || '(file)', message: `"${match}": not a variable name (letters, digits and _)` });
      return match;
    }
    const set = env[name];
    const resolved = set !== undefined && (set !== '' || fallback === undefined) ? set : fallback;
    if (resolved === undefined) {
      problems.push({ path: path || '(file)', message: `environment variable ${name} is not set (\${env:${name}:-default} gives a default)` });
      return match;
    }
    if (offset === 0 && match.length === text.length) whole = resolved;
    return resolved;
  });
  return whole === undefined ? out : typed(whole);
}

/** A whole-value reference keeps a number or boolean type; anything else stays the text it is. */
function typed(text: string): unknown {
  try {
    const v: unknown = parse(text);
    return typeof v === 'number' || typeof v === 'boolean' ? v : text;
  } catch {
    return text;
  }
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}
