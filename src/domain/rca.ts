// AI root-cause analysis, the pure part: the prompt a model is sent (secrets scrubbed, every part
// capped), the answer it must give (validated with zod) and the daily token budget arithmetic.
// The model calls and the storage live in exporters/rca and store/rca.ts.
import { z } from 'zod';
import { scrubSecrets } from './signature.js';

export type HistoryStatus = 'pass' | 'fail' | 'flaky' | 'skip';

export interface RcaHistoryEntry {
  startedAt: number;
  status: HistoryStatus;
  attempt: number;
  commitSha: string;
  branch: string;
}

export interface RcaSimilar {
  clusterId: string;
  errorType: string;
  normalizedMessage: string;
  /** Estimated Jaccard similarity of the error signatures, 0..1. */
  similarity: number;
  analysis: { summary: string; likelyCause: string; suggestedAction: string };
}

/** What the model is told about one new error cluster: its first failing execution and context. */
export interface RcaInput {
  test: { filePath: string; suite: string; title: string };
  branch: string;
  commitSha: string;
  /** As reported (scrubbed here). */
  error: { type: string; message: string; stack: string };
  /** The signature's normalised top frames, innermost first. */
  frames: readonly string[];
  /** The test's executions up to and including the failing one, oldest first. */
  history: readonly RcaHistoryEntry[];
  /** Other clusters of the project that look alike, with their analyses. */
  similar: readonly RcaSimilar[];
}

export interface RcaPrompt {
  system: string;
  user: string;
}

const MAX_MESSAGE = 2_000;
const MAX_STACK_LINES = 12;
const MAX_FRAME = 200;
const MAX_TITLE = 300;
const MAX_SIMILAR_TEXT = 400;
export const MAX_HISTORY = 20;
export const MAX_SIMILAR = 3;

const ESC = String.fromCharCode(27);
const ANSI_RE = new RegExp(`${ESC}\\[[0-9;?]*[ -/]*[@-~]`, 'g');

/** Scrubbed of secrets and terminal colours, whitespace runs kept short, cut to `max` chars. */
function clean(text: string, max: number): string {
  // Cut before scrubbing too, so hostile input stays cheap; again after, since [REDACTED] may lengthen it.
  const s = scrubSecrets(text.slice(0, max * 2).replace(ANSI_RE, ''))
    .replace(/[ \t]+/g, ' ')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

const SYSTEM_PROMPT = [
  'You are a senior software engineer triaging a failing automated test in CI.',
  "From the error, the top stack frames, the test's recent pass/fail history and similar past failures with their analyses, explain the most likely root cause.",
  'Tell a product bug, a bug in the test itself, a flaky test (timing, ordering, shared state, network) and an infrastructure or environment problem apart, and use the history: a test that alternates between pass and fail on the same code is more likely flaky than broken.',
  'Be concrete and brief. Do not invent code or facts you were not shown. Values replaced by [REDACTED] were secrets; never ask for them.',
  'Answer with one JSON object and nothing else: {"summary": one sentence, "likelyCause": a short paragraph, "suggestedAction": what to do next, "confidence": a number from 0 to 1}.',
].join(' ');

const LETTER: Record<HistoryStatus, string> = { pass: 'P', fail: 'F', flaky: 'R', skip: 'S' };

/** One letter per execution, oldest first: P pass, F fail, R failed then passed on a retry, S skipped. */
export function historySequence(history: readonly RcaHistoryEntry[]): string {
  return history.map((h) => LETTER[h.status]).join('');
}

function historyLines(history: readonly RcaHistoryEntry[]): string[] {
  const recent = history.slice(-MAX_HISTORY);
  if (recent.length === 0) return ['(no earlier executions)'];
  const count = (s: HistoryStatus): number => recent.filter((h) => h.status === s).length;
  const lines = [
    `Sequence (oldest → newest; P pass, F fail, R failed then passed on retry, S skipped): ${historySequence(recent)}`,
    `Totals: ${count('pass')} passed, ${count('fail')} failed, ${count('flaky')} flaky, ${count('skip')} skipped; ${new Set(recent.map((h) => h.commitSha)).size} distinct commits`,
  ];
  for (const h of recent) {
    const at = new Date(h.startedAt).toISOString().slice(0, 16).replace('T', ' ');
    lines.push(`- ${at} ${clean(h.branch, 80)} ${clean(h.commitSha, 40).slice(0, 12)} attempt ${h.attempt}: ${h.status}`);
  }
  return lines;
}

/** The prompt for one new error cluster. Every string from CI passes through scrubSecrets. */
export function buildRcaPrompt(input: RcaInput): RcaPrompt {
  const t = input.test;
  const testName = [t.filePath, t.suite, t.title].filter((s) => s.trim() !== '').map((s) => clean(s, MAX_TITLE)).join(' › ');
  const stack = input.error.stack
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .slice(0, MAX_STACK_LINES);
  const parts: string[] = [
    `Test: ${testName}`,
    `Branch: ${clean(input.branch, 120)}, commit ${clean(input.commitSha, 40)}`,
    `Error type: ${clean(input.error.type || 'Error', 200)}`,
    'Error message:',
    clean(input.error.message, MAX_MESSAGE) || '(empty)',
    '',
    'Top stack frames of the code under test (innermost first):',
    ...(input.frames.length > 0 ? input.frames.map((f, i) => `${i + 1}. ${clean(f, MAX_FRAME)}`) : ['(none)']),
  ];
  if (stack.length > 0) parts.push('', `Raw stack (first ${stack.length} lines):`, ...stack.map((l) => clean(l, MAX_FRAME)));
  parts.push('', 'Recent history of this test:', ...historyLines(input.history), '', 'Similar past failures in this project and their analyses:');
  const similar = [...input.similar].sort((a, b) => b.similarity - a.similarity).slice(0, MAX_SIMILAR);
  if (similar.length === 0) parts.push('(none)');
  for (const [i, s] of similar.entries()) {
    parts.push(
      `${i + 1}. (similarity ${s.similarity.toFixed(2)}) ${clean(s.errorType, 100)}: ${clean(s.normalizedMessage, MAX_SIMILAR_TEXT)}`,
      `   Summary: ${clean(s.analysis.summary, MAX_SIMILAR_TEXT)}`,
      `   Likely cause: ${clean(s.analysis.likelyCause, MAX_SIMILAR_TEXT)}`,
      `   Suggested action: ${clean(s.analysis.suggestedAction, MAX_SIMILAR_TEXT)}`,
    );
  }
  parts.push('', 'Reply with the JSON object only.');
  // Once more over the whole text: a secret split across our own joins is still caught.
  return { system: SYSTEM_PROMPT, user: scrubSecrets(parts.join('\n')) };
}

/** The same prompt after an invalid answer, saying what was wrong. */
export function retryPrompt(prompt: RcaPrompt, problem: string): RcaPrompt {
  return {
    system: prompt.system,
    user: `${prompt.user}\n\nYour previous answer was not valid (${problem.slice(0, 300)}). Reply with only the JSON object with the keys summary, likelyCause, suggestedAction and confidence (a number from 0 to 1).`,
  };
}

// ─── The answer ─────────────────────────────────────────────────────────────────────────────────

const text = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .transform((s) => (s.length > max ? `${s.slice(0, max - 1)}…` : s));

/** What a model must answer. Over-long text is cut rather than refused (a retry costs tokens). */
export const rcaOutputSchema = z.object({
  summary: text(500),
  likelyCause: text(4_000),
  suggestedAction: text(4_000),
  confidence: z.number().min(0).max(1),
});
export type RcaOutput = z.output<typeof rcaOutputSchema>;

/** The same as JSON Schema: the Anthropic tool's input schema and Ollama's `format`. */
export const RCA_OUTPUT_JSON_SCHEMA: { type: 'object'; properties: Record<string, Record<string, unknown>>; required: string[]; additionalProperties: false } = {
  type: 'object',
  properties: {
    summary: { type: 'string', description: 'One sentence: what failed and the most likely reason.' },
    likelyCause: { type: 'string', description: 'The most likely root cause, with the evidence for it.' },
    suggestedAction: { type: 'string', description: 'What an engineer should do next.' },
    confidence: { type: 'number', minimum: 0, maximum: 1, description: 'How sure you are, from 0 to 1.' },
  },
  required: ['summary', 'likelyCause', 'suggestedAction', 'confidence'],
  additionalProperties: false,
};

/** The JSON object in a model's text: fenced (```json … ```) or surrounded by prose. */
function extractJson(raw: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(raw);
  const body = fenced ? fenced[1]! : raw;
  const start = body.indexOf('{');
  const end = body.lastIndexOf('}');
  if (start < 0 || end <= start) throw new Error('no JSON object in the answer');
  return JSON.parse(body.slice(start, end + 1)) as unknown;
}

/** A model's answer (an object from a tool call, or text holding one), validated. */
export function parseRcaOutput(raw: unknown): { ok: true; value: RcaOutput } | { ok: false; error: string } {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = extractJson(raw);
    } catch (err) {
      return { ok: false, error: err instanceof SyntaxError ? `not JSON: ${err.message}` : (err as Error).message };
    }
  }
  const parsed = rcaOutputSchema.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
  return { ok: false, error: issues.join('; ').slice(0, 500) };
}

// ─── Budget ─────────────────────────────────────────────────────────────────────────────────────

/** Below this many tokens left for the answer a call is not worth making. */
export const MIN_OUTPUT_TOKENS = 256;
/** Tool definitions and message framing the provider counts on top of our text. */
const REQUEST_OVERHEAD_TOKENS = 400;

/** A deliberately high guess of the input tokens (≈ 3 characters a token; code and ids tokenise densely). */
export function estimateInputTokens(prompt: RcaPrompt): number {
  return Math.ceil((prompt.system.length + prompt.user.length) / 3) + REQUEST_OVERHEAD_TOKENS;
}

export type BudgetDecision =
  | { allowed: true; maxTokens: number }
  /** `spent`: the day's budget is used up (notify once); false for a budget of 0 (RCA simply off). */
  | { allowed: false; spent: boolean };

/**
 * Whether a call fits in what is left of the project's daily budget (counted from the providers'
 * usage), and how many output tokens it may ask for: the budget is a cap, so a call whose
 * estimated input plus a minimal answer no longer fits is not made.
 */
export function budgetDecision(c: { budget: number; used: number; estimatedInput: number; maxOutput: number }): BudgetDecision {
  if (c.budget <= 0) return { allowed: false, spent: false };
  const room = c.budget - c.used - c.estimatedInput;
  if (room < MIN_OUTPUT_TOKENS) return { allowed: false, spent: true };
  return { allowed: true, maxTokens: Math.max(MIN_OUTPUT_TOKENS, Math.min(c.maxOutput, room)) };
}

/** 'YYYY-MM-DD' of the UTC day of `ms`: budgets are per UTC day. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The first millisecond of the UTC day after `ms`. */
export function nextUtcDay(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
}
