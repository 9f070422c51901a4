// Error signatures (pure, no I/O): secrets scrubbed, message and top frames normalised so the same
// failure with different numbers, ids, timestamps, temp paths or line numbers gets the same hash,
// and word shingles for MinHash clustering (see minhash.ts).
import { createHash } from 'node:crypto';

const REDACTED = '[REDACTED]';
const MAX_NORMALIZED = 1000;
/** Work on at most this much input: messages are capped at 4,000 chars upstream anyway. */
const MAX_INPUT = 16_000;
const MAX_LINE = 1000;

// ─── Secrets ────────────────────────────────────────────────────────────────────────────────────

/** Names whose value is a secret: `password=…`, `"api_key": "…"`, `X-Amz-Signature=…`, `NPM_TOKEN=…`. */
const STRONG_NAMES = 'password|passwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|client[_-]?secret';
/** Names that are also ordinary words ("Unexpected token: }"): after a bare ':' only credential-shaped values go. */
const WEAK_NAMES = 'token|pwd|credentials?|auth|signature|sig|session[_-]?id|cookie';
const NAME_PREFIX = '(?<![A-Za-z0-9])((?:[A-Za-z0-9]+[_.-]){0,4}';
const VALUE = '("[^"\\n]*"|\'[^\'\\n]*\'|\\[REDACTED\\][^\\s&;,"\'<>)\\]}]*|[^\\s&;,"\'<>)\\]}]+)';

const SECRET_RULES: readonly { re: RegExp; to: string | ((m: string, ...g: string[]) => string) }[] = [
  // PEM private key blocks (also a truncated one without its END line).
  { re: /-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END \1PRIVATE KEY(?: BLOCK)?-----|$)/g, to: REDACTED },
  // JWTs (header.payload.signature, base64url; the signature may be empty for alg "none").
  { re: /\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, to: REDACTED },
  // Flakehouse API tokens.
  { re: /\bfh_[0-9a-f]{16,}\b/gi, to: REDACTED },
  // GitHub tokens: classic/OAuth/user/server/refresh, and fine-grained PATs.
  { re: /\bgh[pousr]_[A-Za-z0-9]{20,255}\b/g, to: REDACTED },
  { re: /\bgithub_pat_[A-Za-z0-9_]{20,255}\b/g, to: REDACTED },
  // GitLab, npm, Slack (bot/user/app/refresh…), Stripe, Google API keys.
  { re: /\bglpat-[A-Za-z0-9_-]{20,}\b/g, to: REDACTED },
  { re: /\bnpm_[A-Za-z0-9]{36}\b/g, to: REDACTED },
  { re: /\bxox[abposre]-[A-Za-z0-9-]{10,}/g, to: REDACTED },
  { re: /\bxapp-\d-[A-Za-z0-9-]{10,}/g, to: REDACTED },
  { re: /\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}\b/g, to: REDACTED },
  { re: /\bAIza[0-9A-Za-z_-]{35}\b/g, to: REDACTED },
  // AWS access key ids (the secret key itself is caught by the name rules below).
  { re: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|A3T[A-Z0-9])[A-Z0-9]{16}\b/g, to: REDACTED },
  // user:password@ in URLs: keep the user, drop the password.
  { re: /\b([a-z][a-z0-9+.-]{0,30}:\/\/)([^\s:@/?#]{1,256}):([^\s@/?#]{1,256})@/gi, to: (_m, scheme, user) => `${scheme}${user}:${REDACTED}@` },
  // Authorization header values, whatever the scheme.
  {
    re: /\b((?:proxy-)?authorization["']?\s*[:=]\s*["']?)(?:(Bearer|Basic|Token|Digest|Negotiate|AWS4-HMAC-SHA256)\s+)?[^\s"',;]+/gi,
    to: (_m, head, scheme) => `${head}${scheme ? `${scheme} ` : ''}${REDACTED}`,
  },
  // Bearer/Basic credentials in free text: only values that look like credentials (not "Basic auth").
  {
    re: /\b(Bearer|Basic)\s+([A-Za-z0-9\-._~+/]{8,}=*)/g,
    to: (m, scheme, value) => (looksSecret(value) ? `${scheme} ${REDACTED}` : m),
  },
  // name=value (URLs, env, CLI flags) and "name": "value" (JSON): any value.
  {
    re: new RegExp(`${NAME_PREFIX}(?:${STRONG_NAMES}|${WEAK_NAMES}))(["']?\\s*=\\s*|["']\\s*:\\s*)${VALUE}`, 'gi'),
    to: (_m, name, sep, value) => `${name}${sep}${quoteLike(value, REDACTED)}`,
  },
  // name: value in free text and YAML: any value for unambiguous names ("password: hunter2") …
  {
    re: new RegExp(`${NAME_PREFIX}(?:${STRONG_NAMES}))(\\s*:\\s*)${VALUE}`, 'gi'),
    to: (m, name, sep, value) => (value.includes('[REDACTED') ? m : `${name}${sep}${quoteLike(value, REDACTED)}`),
  },
  // … and only credential-shaped ones for names that are also words ("Unexpected token: identifier").
  {
    re: new RegExp(`${NAME_PREFIX}(?:${WEAK_NAMES}))(\\s*:\\s*)${VALUE}`, 'gi'),
    to: (m, name, sep, value) => (looksSecret(unquote(value)) ? `${name}${sep}${quoteLike(value, REDACTED)}` : m),
  },
];

function unquote(v: string): string {
  return /^(["']).*\1$/.test(v) ? v.slice(1, -1) : v;
}

function quoteLike(original: string, replacement: string): string {
  const q = original[0];
  return (q === '"' || q === "'") && original.length >= 2 && original.endsWith(q) ? `${q}${replacement}${q}` : replacement;
}

/** Credential-shaped: long enough, and random-looking (digits, mixed case or base64 padding). */
function looksSecret(v: string): boolean {
  if (v.length >= 24 && /^[A-Za-z0-9+/=_\-.~]+$/.test(v)) return true;
  if (v.length < 8) return false;
  return /\d/.test(v) || /=$/.test(v) || (/[a-z]/.test(v) && /[A-Z]/.test(v.slice(1)));
}

/**
 * Removes credentials before anything is stored or sent to an LLM: Authorization/Bearer/Basic
 * values, fh_ tokens, AWS key ids, GitHub/GitLab/npm/Slack/Stripe/Google tokens, JWTs, PEM private
 * key blocks, password=/secret=/token=/api_key=… values in URLs, env lines and JSON, and the
 * password of user:pass@ in URLs. Each secret becomes '[REDACTED]'; surrounding text is kept.
 */
export function scrubSecrets(text: string): string {
  let out = text;
  for (const { re, to } of SECRET_RULES) {
    re.lastIndex = 0;
    out = typeof to === 'string' ? out.replace(re, to) : out.replace(re, to);
  }
  return out;
}

// ─── Messages ───────────────────────────────────────────────────────────────────────────────────

const ESC = String.fromCharCode(27);
const ANSI_RE = new RegExp(`${ESC}\\[[0-9;?]*[ -/]*[@-~]`, 'g');

/** Temp and per-run directories (POSIX, macOS, Windows, CI scratch dirs) up to the next delimiter. */
const TEMP_PATH_RE =
  /(?:file:\/\/)?(?:(?:\/private)?\/(?:tmp|var\/tmp|var\/folders|dev\/shm)\/|\/home\/[^/\s]+\/work\/_temp\/|\/run\/user\/\d+\/|[A-Za-z]:\\(?:Users\\[^\\\s]+\\AppData\\Local\\Temp|Windows\\Temp|Temp)\\)[^\s'"`<>()[\]{},;]*/gi;

const TEMP_PATH_TEST_RE = new RegExp(`^(?:${TEMP_PATH_RE.source})`, 'i');

const NORMALIZERS: readonly [RegExp, string][] = [
  // ISO-8601 timestamps and dates, then bare clock times.
  [/\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b/g, '<ts>'],
  [/\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b/g, '<ts>'],
  // UUIDs, memory addresses, hex ids (≥ 8 hex chars mixing digits and a–f: commit shas, object ids).
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<uuid>'],
  [/\b0x[0-9a-f]+\b/gi, '<addr>'],
  [/(?<![A-Za-z0-9])(?=[a-f]*\d)(?=\d*[a-f])[0-9a-f]{8,}(?![A-Za-z0-9])/gi, '<hex>'],
  // line[:col] after a source file name: "src/a.ts:12:7" → "src/a.ts".
  [/(\.[A-Za-z][A-Za-z0-9]{0,5}):\d+(?::\d+)?\b/g, '$1'],
  // "(line 12, column 4)", "line 12", "at position 34".
  [/\b(line|column|col|position|pos|offset)\s*\d+/gi, '$1 <num>'],
  // Durations: 12ms, 1.5 s, 30000 milliseconds, 2m.
  [/(?<![A-Za-z0-9.])\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)(?![A-Za-z0-9])/g, '<duration>'],
  // Remaining numbers (also inside identifiers: user42 → user<num>; ports, sizes, counts).
  [/\d+(?:\.\d+)?/g, '<num>'],
];

/** A quoted value ('…', "…", `…`) that is dynamic: has digits, a placeholder, or is long. */
const QUOTED_RE = /(?<![A-Za-z0-9])(['"`])((?:(?!\1)[^\\\n]|\\.){0,300})\1(?![A-Za-z0-9])/g;

/**
 * Stable text for grouping: secrets scrubbed; timestamps, UUIDs, memory addresses, hex ids, temp
 * paths, line:col after file names, durations and numbers replaced by <ts>, <uuid>, <addr>, <hex>,
 * <path>, <duration>, <num>; quoted values that are dynamic (contain digits or are longer than 40
 * chars) by <str>, while short literal words ('visible', "Submit") stay because they carry the
 * meaning of the assertion; ANSI colours removed; whitespace collapsed; cut to 1,000 chars.
 */
export function normalizeMessage(message: string): string {
  let s = scrubSecrets(message.length > MAX_INPUT ? message.slice(0, MAX_INPUT) : message);
  s = s.replace(ANSI_RE, '');
  s = s.replace(TEMP_PATH_RE, '<path>');
  s = s.replace(QUOTED_RE, (m: string, q: string, body: string) => (/\d/.test(body) || body.length > 40 || body.includes(REDACTED) ? `${q}<str>${q}` : m));
  for (const [re, to] of NORMALIZERS) s = s.replace(re, to);
  s = s.replace(/\s+/g, ' ').trim();
  return s.length > MAX_NORMALIZED ? s.slice(0, MAX_NORMALIZED) : s;
}

// ─── Stack frames ───────────────────────────────────────────────────────────────────────────────

interface Frame {
  fn: string;
  file: string;
}

/** Frames that are not the code under test: runtimes, dependencies, test runners, assertion libs. */
const SKIP_FILE_RE =
  /(?:^|[/\\])(?:node_modules|\.pnpm|\.yarn|site-packages|dist-packages|_pytest|pytest|pluggy|unittest|gems|rspec-core|minitest)(?:[/\\]|$)|^(?:node:|internal\/|<anonymous>$|native$|<frozen |<string>$|\[native code\]$|index \d+$)|\/lib\/python\d[\d.]*\/|\/(?:go|golang)\/src\/(?:runtime|testing)\/|(?:^|\/)(?:jest-circus|jest-jasmine2|jest-runner|vitest|@vitest|mocha|playwright|playwright-core|@playwright)\//i;
const SKIP_FN_RE =
  /^(?:java\.lang\.reflect\.|java\.base\/(?:java\.lang\.reflect|jdk\.internal)|jdk\.internal\.|jdk\.proxy\d*\.|sun\.reflect\.|org\.junit\.|junit\.framework\.|org\.testng\.|org\.apache\.maven\.surefire\.|org\.gradle\.|worker\.org\.gradle\.|org\.assertj\.|org\.hamcrest\.|org\.opentest4j\.|org\.spockframework\.runtime\.|kotlin\.test\.|runtime\.|testing\.|System\.(?:Runtime|Reflection|RuntimeMethodHandle)|System\.|Microsoft\.|NUnit\.|Xunit\.|Microsoft\.VisualStudio\.TestTools\.|processTicksAndRejections$|process\.processTicksAndRejections$)/;

/** CI checkouts and home directories: dropped so the same code gives the same path everywhere. */
const WORKSPACE_PREFIX_RE =
  /^(?:\/home\/[^/]+\/work\/[^/]+\/[^/]+\/|\/Users\/runner\/work\/[^/]+\/[^/]+\/|[A-Za-z]:\/a\/[^/]+\/[^/]+\/|\/github\/workspace\/|\/builds\/[^/]+\/[^/]+\/|\/var\/lib\/jenkins\/workspace\/[^/]+\/|\/(?:home|Users)\/[^/]+\/|\/workspace\/|\/app\/|\/src\/app\/)/;

/** Path without scheme, query, line/column; CI/home prefixes dropped; at most the last 3 segments. */
function normalizePath(raw: string): string {
  let p = raw.trim();
  p = p.replace(/^(?:file:\/\/\/?(?=[A-Za-z]:)|file:\/\/|webpack-internal:\/\/\/|webpack:\/\/[^/]*\/|vite:\/\/|rsc:\/\/[^/]*\/)/, '');
  p = p.replace(/\\/g, '/');
  p = p.replace(/^(?:https?|wss?):\/\/[^/]+\//, ''); // dev-server URLs: the host:port changes per run
  p = p.replace(/[?#].*$/, '');
  p = p.replace(/(?::\d+){1,2}$/, '');
  p = p.replace(/^\.\//, '');
  if (TEMP_PATH_TEST_RE.test(p)) {
    // Keep only the file name of a temp path: the directory is per run.
    const base = p.split('/').pop() ?? p;
    return `<tmp>/${base.replace(/\d+/g, '<num>')}`;
  }
  p = p.replace(WORKSPACE_PREFIX_RE, '');
  const parts = p.split('/').filter((x) => x !== '');
  return parts.length > 3 ? parts.slice(-3).join('/') : parts.join('/');
}

function cleanFn(fn: string): string {
  return fn
    .trim()
    .replace(/^async\s+/, '')
    .replace(/\s+\[as [^\]]+\]$/, '');
}

const V8_RE = /^\s*at\s+(?:(.+?)\s+\((.+)\)|(.+))\s*$/;
const JAVA_RE = /^\s*at\s+((?:[\w$]+\/\/?)?[\w$./<>-]+?)\(([^()]*)\)\s*(?:~?\[[^\]]*\])?\s*$/;
const DOTNET_RE = /^\s*at\s+(.+?\))\s+in\s+(.+?):line\s+\d+\s*$/;
const PY_RE = /^\s*File\s+"([^"]+)",\s+line\s+\d+(?:,\s+in\s+(.+?))?\s*$/;
const PYTEST_RE = /^([^\s:]+\.py):\d+:\s+in\s+(\S+)\s*$/;
const RUBY_RE = /^\s*(?:from\s+)?([^\s:]+\.rb):\d+(?::in\s+[`'](.+?)')?/;
const GO_FN_RE = /^((?:[\w.-]+\/)*[\w.-]+\.[\w$.*()[\]-]+)\(.*\)$/;
const GO_FILE_RE = /^\s+(\S+\.go):\d+(?:\s+\+0x[0-9a-f]+)?\s*$/;
/** What V8 puts in a frame's location: file:line[:col], or a marker for code without a file. */
const V8_LOC_RE = /:\d+(?::\d+)?$|^(?:<anonymous>|native|\[native code\]|index \d+|unknown location)$/;

function parseStack(stack: string): Frame[] {
  const lines = stack.length > MAX_INPUT * 2 ? stack.slice(0, MAX_INPUT * 2).split('\n') : stack.split('\n');
  const frames: Frame[] = [];
  const python: Frame[] = [];
  for (let i = 0; i < lines.length; i++) {
    // Frames are short; capping the line keeps the regexes linear on hostile input.
    const line = lines[i]!.slice(0, MAX_LINE).replace(/\r$/, '');
    let m: RegExpExecArray | null;
    if ((m = PY_RE.exec(line))) {
      python.push({ fn: m[2] ?? '', file: m[1]! });
    } else if ((m = PYTEST_RE.exec(line))) {
      python.push({ fn: m[2]!, file: m[1]! });
    } else if ((m = DOTNET_RE.exec(line))) {
      frames.push({ fn: m[1]!.replace(/\(.*\)$/, ''), file: m[2]! });
    } else if ((m = JAVA_RE.exec(line))) {
      // Module / class-loader prefixes ("java.base/", "app//") are not part of the class name.
      frames.push({ fn: m[1]!.replace(/^(?:[\w$.@-]+\/)+\/?/, ''), file: (m[2]!.split(':')[0] ?? '').trim() });
    } else if ((m = V8_RE.exec(line))) {
      if (m[1] !== undefined) {
        // "at fn (file:line:col)"; eval frames name the outer location: "eval at x (file:1:2), <anonymous>:1:1".
        const loc = m[2]!.replace(/^eval at .*?\((.+?)\).*$/, '$1');
        if (V8_LOC_RE.test(loc)) frames.push({ fn: cleanFn(m[1]), file: loc });
      } else if (V8_LOC_RE.test(m[3]!)) {
        frames.push({ fn: '', file: m[3]! }); // "at file:line:col" (anonymous function)
      }
    } else if ((m = GO_FN_RE.exec(line.trim())) && i + 1 < lines.length && GO_FILE_RE.test(lines[i + 1]!.slice(0, MAX_LINE))) {
      const file = GO_FILE_RE.exec(lines[i + 1]!.slice(0, MAX_LINE))![1]!;
      frames.push({ fn: m[1]!, file });
      i++;
    } else if ((m = RUBY_RE.exec(line))) {
      frames.push({ fn: m[2] ?? '', file: m[1]! });
    }
  }
  // Python prints the innermost call last: reverse so every language lists the innermost first.
  if (python.length > 0) frames.push(...python.reverse());
  return frames;
}

function isUnderTest(f: Frame): boolean {
  if (f.file === '' && f.fn === '') return false;
  const file = f.file.replace(/\\/g, '/').replace(/^file:\/\/\/?/, '');
  if (file !== '' && SKIP_FILE_RE.test(file)) return false;
  if (f.fn !== '' && SKIP_FN_RE.test(f.fn)) return false;
  if (/^(?:Native Method|Unknown Source)$/.test(f.file)) return !SKIP_FN_RE.test(f.fn);
  return true;
}

/**
 * The first n stack frames that belong to the code under test, innermost first, as
 * "function (path)" (or just the path for anonymous frames): line and column numbers, URL schemes,
 * queries, CI/home prefixes dropped, at most the last 3 path segments kept. Skips runtimes and
 * dependencies (node:internal, node_modules, site-packages, GOROOT runtime/testing), test runners
 * (jest, vitest, mocha, playwright, JUnit, TestNG, Surefire, Gradle, pytest, unittest, rspec,
 * minitest) and reflection/assertion-library frames. Understands V8, Java/Kotlin, .NET, Python
 * (tracebacks and pytest's short form), Go panics and Ruby backtraces.
 */
export function topFrames(stack: string | undefined, n = 5): string[] {
  if (stack === undefined || stack === '' || n <= 0) return [];
  const out: string[] = [];
  for (const f of parseStack(stack)) {
    if (!isUnderTest(f)) continue;
    const file = f.file === '' || /^(?:Native Method|Unknown Source)$/.test(f.file) ? '' : normalizePath(f.file);
    const fn = f.fn.replace(/\s+/g, ' ');
    const frame = scrubSecrets(fn !== '' && file !== '' ? `${fn} (${file})` : fn !== '' ? fn : file);
    if (frame === '') continue;
    out.push(frame);
    if (out.length >= n) break;
  }
  return out;
}

// ─── Signature ──────────────────────────────────────────────────────────────────────────────────

export interface ErrorSignature {
  /** 16 hex chars: sha256(projectId, type, normalizedMessage, frames). */
  hash: string;
  type: string;
  normalizedMessage: string;
  frames: string[];
  /** Distinct word shingles for MinHash (type, message words and word pairs, frames). */
  tokens: string[];
}

const TYPE_PREFIX_RE = /^\s*((?:[A-Za-z_$][\w$]*\.)*[\w$]*(?:Error|Exception|Failure|Failed|Panic|Timeout|Fault|Violation|Interrupt))(?:\s*\[[A-Z0-9_]+\])?:\s/;

function inferType(message: string, stack: string | undefined): string {
  const m = TYPE_PREFIX_RE.exec(message) ?? (stack !== undefined ? TYPE_PREFIX_RE.exec(stack) : null);
  if (m) return m[1]!;
  if (stack !== undefined && /^\s*panic:/.test(stack)) return 'panic';
  return 'Error';
}

/**
 * Words that appear in a large share of all failure messages. As single tokens they would make
 * unrelated signatures look slightly alike (J ≈ 0.05 instead of ≈ 0), and with LSH every such pair
 * is a candidate with probability ≈ bands·J^rows, so the candidate count would grow with the
 * number of stored signatures. They still count inside word pairs ("to be", "expected <num>").
 */
const STOP_WORDS = new Set(
  (
    'a an the to be is was are were been being of in on at by for with from into as and or but if then than that this it its ' +
    'not no expected expect received actual got should have has had do does did can cannot could would will error failed ' +
    'failure exception assertion true false null undefined'
  ).split(' '),
);

/**
 * MinHash tokens: the type; message words (lower-cased, placeholders like <num> kept whole) as
 * adjacent pairs, plus single words except placeholders and STOP_WORDS; each frame whole.
 */
function shingles(type: string, normalizedMessage: string, frames: readonly string[]): string[] {
  const set = new Set<string>();
  set.add(`t:${type}`);
  const words = normalizedMessage.toLowerCase().match(/<[a-z]+>|\[redacted\]|[\p{L}\p{N}_$]+(?:[.'-][\p{L}\p{N}_$]+)*|[^\s\p{L}\p{N}]{2,}/gu) ?? [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (w[0] !== '<' && w[0] !== '[' && !STOP_WORDS.has(w)) set.add(`w:${w}`);
    if (i + 1 < words.length) set.add(`b:${w} ${words[i + 1]}`);
  }
  for (const f of frames) set.add(`f:${f}`);
  return [...set];
}

/**
 * Signature of an execution's error. The type is error.type, else a "FooError:" prefix of the
 * message or stack, else "Error"; a leading "<type>: " is dropped from the message so reporters
 * that do and do not repeat the type agree. hash = first 16 hex of sha256 over projectId, type,
 * normalizedMessage and frames (NUL-separated), so signatures never merge across projects.
 */
export function errorSignature(projectId: string, error: { type?: string; message: string; stack?: string }): ErrorSignature {
  const type = (error.type?.trim() || inferType(error.message, error.stack)).slice(0, 200);
  let message = error.message;
  const prefix = TYPE_PREFIX_RE.exec(message);
  if (prefix && (prefix[1] === type || type.endsWith(`.${prefix[1]}`) || prefix[1]!.endsWith(`.${type}`))) message = message.slice(prefix[0].length);
  const normalizedMessage = normalizeMessage(message);
  const frames = topFrames(error.stack, 5);
  const h = createHash('sha256');
  h.update(projectId).update('\u0000').update(type).update('\u0000').update(normalizedMessage).update('\u0000').update(frames.join('\n'));
  const hash = h.digest('hex').slice(0, 16);
  return { hash, type, normalizedMessage, frames, tokens: shingles(type, normalizedMessage, frames) };
}
