// What a log line may not say: one rule, applied by the logger to every line it writes
// (src/telemetry/logger.ts), so no route or component has to remember it. Credentials are recognised by
// the name they travel under (a query parameter, a header, a field at any depth) and by our own
// token format wherever it appears; their values become "[redacted]". The rule is stated for
// operators in docs/operations.md (Logs).

export const REDACTED = '[redacted]';

/**
 * Names whose value is a credential, compared lowercased with `-`, `_` and `.` removed (so
 * `X-ClickHouse-Key`, `x_clickhouse_key` and `xClickhouseKey` are one name). `X-ClickHouse-User`
 * is not one: it is a project slug or `admin`, and naming the user is what explains a refused login.
 */
export const CREDENTIAL_NAMES: readonly string[] = [
  'token',
  'password',
  'passwd',
  'pass',
  'pwd',
  'secret',
  'key',
  'apikey',
  'authorization',
  'proxyauthorization',
  'cookie',
  'setcookie',
  'sid',
  'xclickhousekey',
  'signature',
  'sig',
  'xamzsignature',
  'xamzcredential',
  'credential',
  'credentials',
];
const NAMES: ReadonlySet<string> = new Set(CREDENTIAL_NAMES);

/**
 * Any name ending in one of these is a credential too: `adminToken`, `access_token`,
 * `client_secret`, `x-csrf-token`, `X-CSRF`, `smtpPassword`, `flakehouse_session` (the dashboard's cookie).
 */
export const CREDENTIAL_SUFFIXES: readonly string[] = ['token', 'password', 'secret', 'secretkey', 'secretaccesskey', 'apikey', 'privatekey', 'passphrase', 'session', 'sessionid', 'csrf', 'xsrf'];

export function isCredentialName(name: string): boolean {
  // `token[]` and `token[0]` are the same parameter to the qs-style parsers clients use.
  const n = name.replace(/\[[^\]]*\]$/, '').toLowerCase().replace(/[-_.]/g, '');
  if (n === '') return false;
  return NAMES.has(n) || CREDENTIAL_SUFFIXES.some((s) => n.endsWith(s));
}

/** `name=value` after the start of a query string, a separator, or a space; the value runs to the next separator. */
const PARAM = /(^|[?&;\s,(])([^\s=&?#;,()]+)=([^\s&#]*)/g;
/** `scheme://user:password@` or `scheme://token@`. */
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@]*)@/gi;
/** An Authorization value quoted in text (an error message echoing a header, a curl line). */
const AUTH_SCHEME = /\b(bearer|basic)(\s+)([A-Za-z0-9._~+/-]{8,}=*)/gi;
/** Our tokens (project `fh_`, generated admin `fha_`): recognisable anywhere, a path segment included. */
const OUR_TOKEN = /(fha?_)[0-9a-f]{48}/g;

function decodedName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}

/** Values redacted wherever they appear (registered by the daemon: secrets with no telling shape). */
const literalSecrets = new Set<string>();

/**
 * Redacts `secret` wherever it appears in a log line from now on, whatever carries it (a URL path,
 * a message). For a secret of an operator's choosing, which no name or shape rule can recognise;
 * too short a value (under 12 characters) would redact ordinary words, and is not taken.
 */
export function redactLiteral(secret: string): void {
  if (secret.length >= 12) literalSecrets.add(secret);
}

/**
 * A string with every credential it carries replaced: query parameters (and `name=value` pairs in
 * text) under a credential name, the password of a URL's userinfo (a userinfo without one, being a
 * token itself, whole), Bearer/Basic credentials, and our token format.
 */
export function redactText(text: string): string {
  let out = text;
  // Secrets of a free form (an operator's own SERVICE_ADMIN_TOKEN) are known only by their value.
  for (const secret of literalSecrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  if (out.includes('=')) {
    out = out.replace(PARAM, (whole, lead: string, name: string, value: string) =>
      value !== '' && value !== REDACTED && isCredentialName(decodedName(name)) ? `${lead}${name}=${REDACTED}` : whole,
    );
  }
  if (out.includes('@')) {
    out = out.replace(USERINFO, (whole, scheme: string, info: string) => {
      if (info === '') return whole;
      const colon = info.indexOf(':');
      return colon < 0 ? `${scheme}${REDACTED}@` : `${scheme}${info.slice(0, colon)}:${REDACTED}@`;
    });
  }
  out = out.replace(AUTH_SCHEME, (whole, scheme: string, space: string, value: string) =>
    // A credential has a digit or is long; "basic authentication" is neither.
    /\d/.test(value) || value.length >= 20 ? `${scheme}${space}${REDACTED}` : whole,
  );
  return out.replace(OUR_TOKEN, `$1${REDACTED}`);
}

/**
 * A value with credential-named fields replaced (at any depth) and every string run through
 * redactText; the value itself (the same reference) when there was nothing to redact.
 */
export function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return redactText(value);
  if (Array.isArray(value)) {
    const items = value.map(redactValue);
    return items.some((v, i) => v !== value[i]) ? items : value;
  }
  if (value !== null && typeof value === 'object') {
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      // A boolean says whether there is one (`tokenPresent`-style), never what it is.
      const r = isCredentialName(k) && v !== null && typeof v !== 'boolean' ? REDACTED : redactValue(v);
      if (r !== v) changed = true;
      out[k] = r;
    }
    return changed ? out : value;
  }
  return value;
}

/**
 * What may carry a credential, looked for in the line lowercased with `-`, `_` and `.` removed (as
 * names are compared): a line without any of it is written untouched, with no parse.
 */
const SUSPECT = new RegExp(`[=@]|bearer|basic|fha?[0-9a-f]{48}|${[...CREDENTIAL_NAMES, ...CREDENTIAL_SUFFIXES].join('|')}`);

/**
 * One written log line (pino's JSON, newline-terminated), redacted. Parsed rather than matched as
 * text, so a field's name is known at any depth and a string's escapes cannot hide a value; a line
 * that changes is written again as JSON, one that does not is returned as it was.
 */
export function redactLogLine(line: string): string {
  if (!SUSPECT.test(line.toLowerCase().replace(/[-_.]/g, '')) && ![...literalSecrets].some((secret) => line.includes(secret))) return line;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    // Not JSON (a foreign stream): the text rules still apply.
    return redactText(line);
  }
  const redacted = redactValue(parsed);
  if (redacted === parsed) return line;
  const json = JSON.stringify(redacted);
  return line.endsWith('\n') ? `${json}\n` : json;
}

/** A URL (fastify's `req.url`: path and query) with credential query parameters redacted. */
export function redactUrl(url: string): string {
  return redactText(url);
}
