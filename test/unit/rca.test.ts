// The pure part of AI root-cause analysis: what the model is sent (and never sent), how its answer
// is validated, and the daily budget arithmetic.
import { describe, expect, it } from 'vitest';
import {
  MIN_OUTPUT_TOKENS,
  budgetDecision,
  buildRcaPrompt,
  estimateInputTokens,
  historySequence,
  nextUtcDay,
  parseRcaOutput,
  retryPrompt,
  utcDay,
  type RcaHistoryEntry,
  type RcaInput,
} from '../../src/domain/rca.js';
import { loadAiSettings, redactAiSettings } from '../../src/config/ai.js';
import type { ConfigError } from '../../client/src/contract/config/errors.js';

const SECRETS = {
  github: 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8',
  awsKeyId: 'AKIAIOSFODNN7EXAMPLE',
  awsSecret: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  password: 'hunter2-Correct-Horse',
  bearer: 'tok9Xq2LmZ7vB4nR8sT1',
  urlPassword: 's3cr3tPassw0rd',
  jwt: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
  flakehouse: 'fh_0123456789abcdef0123456789abcdef0123456789abcdef',
};

function history(statuses: string): RcaHistoryEntry[] {
  const map = { P: 'pass', F: 'fail', R: 'flaky', S: 'skip' } as const;
  return [...statuses].map((c, i) => ({
    startedAt: Date.parse('2026-11-20T10:00:00Z') + i * 3_600_000,
    status: map[c as keyof typeof map],
    attempt: 1,
    commitSha: i % 2 === 0 ? 'abc1234def' : 'fed4321cba',
    branch: 'main',
  }));
}

function input(overrides: Partial<RcaInput> = {}): RcaInput {
  return {
    test: { filePath: 'src/checkout/cart.test.ts', suite: 'cart', title: 'applies a coupon' },
    branch: 'main',
    commitSha: 'abc1234def',
    error: {
      type: 'AssertionError',
      message:
        `expected 90 to be 80 while calling https://deploy:${SECRETS.urlPassword}@api.internal/v1/cart with ` +
        `Authorization: Bearer ${SECRETS.bearer}, GITHUB_TOKEN=${SECRETS.github} aws_access_key_id=${SECRETS.awsKeyId} ` +
        `aws_secret_access_key=${SECRETS.awsSecret} password: ${SECRETS.password} session ${SECRETS.jwt} token ${SECRETS.flakehouse}`,
      stack: `AssertionError: expected 90 to be 80\n    at applyCoupon (/home/runner/work/shop/shop/src/checkout/cart.ts:41:11)\n    at Object.<anonymous> (src/checkout/cart.test.ts:12:5)`,
    },
    frames: ['applyCoupon (src/checkout/cart.ts)', 'Object.<anonymous> (src/checkout/cart.test.ts)'],
    history: history('PPFPRPF'),
    similar: [
      {
        clusterId: 'c1',
        errorType: 'AssertionError',
        normalizedMessage: 'expected <num> to be <num> in coupon total',
        similarity: 0.42,
        analysis: { summary: 'Coupon rounding differs by locale', likelyCause: 'toFixed on a float', suggestedAction: 'Use integer cents' },
      },
    ],
    ...overrides,
  };
}

describe('buildRcaPrompt', () => {
  it('carries the error, the frames, the history and similar clusters with their analyses', () => {
    const { system, user } = buildRcaPrompt(input());
    expect(system).toMatch(/JSON object/);
    expect(user).toContain('src/checkout/cart.test.ts › cart › applies a coupon');
    expect(user).toContain('Error type: AssertionError');
    expect(user).toContain('expected 90 to be 80');
    expect(user).toContain('1. applyCoupon (src/checkout/cart.ts)');
    expect(user).toContain('PPFPRPF');
    expect(user).toMatch(/Totals: 4 passed, 2 failed, 1 flaky, 0 skipped; 2 distinct commits/);
    expect(user).toContain('(similarity 0.42) AssertionError: expected <num> to be <num> in coupon total');
    expect(user).toContain('Summary: Coupon rounding differs by locale');
    expect(user).toContain('Suggested action: Use integer cents');
  });

  it('never contains a secret: tokens, keys, passwords, bearer values, URL credentials, JWTs', () => {
    const { system, user } = buildRcaPrompt(input());
    const text = `${system}\n${user}`;
    for (const [name, secret] of Object.entries(SECRETS)) expect(text, name).not.toContain(secret);
    expect(user).toContain('[REDACTED]');
    // The non-secret parts around them stay.
    expect(user).toContain('https://deploy:[REDACTED]@api.internal/v1/cart');
  });

  it('scrubs secrets in every field, not only the message', () => {
    const { user } = buildRcaPrompt(
      input({
        test: { filePath: 'src/a.test.ts', suite: `suite password=${SECRETS.password}`, title: `uses ${SECRETS.github}` },
        frames: [`fetch (https://u:${SECRETS.urlPassword}@h/x)`],
        similar: [
          {
            clusterId: 'c2',
            errorType: 'Error',
            normalizedMessage: `401 with Bearer ${SECRETS.bearer}`,
            similarity: 0.3,
            analysis: { summary: `key ${SECRETS.awsKeyId} expired`, likelyCause: 'rotation', suggestedAction: 'rotate' },
          },
        ],
      }),
    );
    for (const [name, secret] of Object.entries(SECRETS)) expect(user, name).not.toContain(secret);
  });

  it('caps what it sends: a huge message, a long history, many similar clusters', () => {
    const { user } = buildRcaPrompt(
      input({
        error: { type: 'Error', message: 'x'.repeat(100_000), stack: Array.from({ length: 500 }, (_, i) => `    at f${i} (src/f.ts:${i}:1)`).join('\n') },
        history: history('PF'.repeat(200)),
        similar: Array.from({ length: 10 }, (_, i) => ({
          clusterId: `c${i}`,
          errorType: 'Error',
          normalizedMessage: `m${i}`,
          similarity: i / 10,
          analysis: { summary: 's', likelyCause: 'l', suggestedAction: 'a' },
        })),
      }),
    );
    expect(user.length).toBeLessThan(8_000);
    expect(user.match(/^\d\. \(similarity/gm)).toHaveLength(3);
    // The most similar first.
    expect(user).toContain('1. (similarity 0.90) Error: m9');
    expect(user).not.toContain('at f20 ');
  });

  it('says when there is no history and no similar cluster', () => {
    const { user } = buildRcaPrompt(input({ history: [], similar: [], frames: [] }));
    expect(user).toContain('(no earlier executions)');
    expect(user).toMatch(/Similar past failures in this project and their analyses:\n\(none\)/);
  });

  it('a retry repeats the prompt and says what was wrong', () => {
    const p = buildRcaPrompt(input());
    const r = retryPrompt(p, 'confidence: Too big');
    expect(r.system).toBe(p.system);
    expect(r.user.startsWith(p.user)).toBe(true);
    expect(r.user).toContain('not valid (confidence: Too big)');
  });
});

describe('historySequence', () => {
  it('is one letter per execution, oldest first', () => {
    expect(historySequence(history('PFRS'))).toBe('PFRS');
  });
});

describe('parseRcaOutput', () => {
  const good = { summary: 'Coupon total off by 10', likelyCause: 'Rounding', suggestedAction: 'Use cents', confidence: 0.7 };

  it('accepts a tool-call object and JSON text, fenced or with prose around it', () => {
    expect(parseRcaOutput(good)).toEqual({ ok: true, value: good });
    expect(parseRcaOutput(JSON.stringify(good))).toEqual({ ok: true, value: good });
    expect(parseRcaOutput(`Here you go:\n\`\`\`json\n${JSON.stringify(good, null, 2)}\n\`\`\`\n`)).toEqual({ ok: true, value: good });
    expect(parseRcaOutput(`Sure! ${JSON.stringify(good)} Hope it helps.`)).toEqual({ ok: true, value: good });
  });

  it('drops unknown keys, trims, and cuts over-long text instead of refusing it', () => {
    const r = parseRcaOutput({ ...good, summary: `  ${'s'.repeat(900)}  `, extra: 1 });
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.value.summary).toHaveLength(500);
      expect(r.value).not.toHaveProperty('extra');
    }
  });

  it('refuses what is not a valid answer, naming the problem', () => {
    const cases: [unknown, RegExp][] = [
      ['I think the test is flaky.', /no JSON object/],
      ['{"summary": "x", ', /no JSON object|not JSON/],
      ['{summary: x}', /not JSON/],
      [{ ...good, confidence: 1.5 }, /confidence/],
      [{ ...good, confidence: '0.5' }, /confidence/],
      [{ ...good, summary: '   ' }, /summary/],
      [{ summary: 'x', confidence: 0.2 }, /likelyCause/],
      [null, /root|expected/i],
      [42, /root|expected/i],
    ];
    for (const [raw, re] of cases) {
      const r = parseRcaOutput(raw);
      expect(r.ok, JSON.stringify(raw)).toBe(false);
      if (!r.ok) expect(r.error).toMatch(re);
    }
  });
});

describe('budget', () => {
  it('allows a call that fits, with the answer capped to what is left', () => {
    expect(budgetDecision({ budget: 200_000, used: 0, estimatedInput: 2_000, maxOutput: 1024 })).toEqual({ allowed: true, maxTokens: 1024 });
    expect(budgetDecision({ budget: 10_000, used: 7_500, estimatedInput: 2_000, maxOutput: 1024 })).toEqual({ allowed: true, maxTokens: 500 });
  });

  it('refuses a call whose input and a minimal answer no longer fit: the budget is spent', () => {
    expect(budgetDecision({ budget: 10_000, used: 7_800, estimatedInput: 2_000, maxOutput: 1024 })).toEqual({ allowed: false, spent: true });
    expect(budgetDecision({ budget: 10_000, used: 10_000, estimatedInput: 0, maxOutput: 1024 })).toEqual({ allowed: false, spent: true });
    expect(budgetDecision({ budget: 10_000, used: 12_345, estimatedInput: 0, maxOutput: 1024 })).toEqual({ allowed: false, spent: true });
    expect(budgetDecision({ budget: 10_000, used: 10_000 - MIN_OUTPUT_TOKENS, estimatedInput: 0, maxOutput: 1024 })).toEqual({ allowed: true, maxTokens: MIN_OUTPUT_TOKENS });
  });

  it('a budget of 0 keeps RCA off without calling it spent', () => {
    expect(budgetDecision({ budget: 0, used: 0, estimatedInput: 0, maxOutput: 1024 })).toEqual({ allowed: false, spent: false });
  });

  it('estimates input tokens on the high side of the usual ~4 characters a token', () => {
    const p = { system: 'a'.repeat(300), user: 'b'.repeat(2700) };
    expect(estimateInputTokens(p)).toBeGreaterThanOrEqual(3000 / 4);
    expect(estimateInputTokens(p)).toBe(1000 + 400);
  });

  it('counts per UTC day', () => {
    const t = Date.parse('2026-11-20T23:59:59.999Z');
    expect(utcDay(t)).toBe('2026-11-20');
    expect(nextUtcDay(t)).toBe(Date.parse('2026-11-21T00:00:00Z'));
    expect(utcDay(nextUtcDay(t))).toBe('2026-11-21');
    expect(nextUtcDay(Date.parse('2026-12-31T08:00:00Z'))).toBe(Date.parse('2027-01-01T00:00:00Z'));
  });
});

describe('AI settings (environment)', () => {
  const load = (env: Record<string, string>): { ai: ReturnType<typeof loadAiSettings>; errors: string[] } => {
    const errors: ConfigError[] = [];
    const ai = loadAiSettings(env, errors);
    return { ai, errors: errors.map((e) => e.message) };
  };

  it('is off without a provider, whatever else is set', () => {
    expect(load({ SERVICE_AI_MODEL: 'm', SERVICE_AI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k2' })).toEqual({ ai: undefined, errors: [] });
  });

  it('gives each provider its default model and endpoint', () => {
    expect(load({ SERVICE_AI_PROVIDER: 'anthropic', SERVICE_AI_API_KEY: 'sk-1' }).ai).toEqual({
      provider: 'anthropic',
      apiKey: 'sk-1',
      model: 'claude-sonnet-5-5',
      endpoint: 'https://api.anthropic.com',
      timeoutMs: 60_000,
    });
    expect(load({ SERVICE_AI_PROVIDER: 'Ollama' }).ai).toEqual({ provider: 'ollama', apiKey: undefined, model: 'llama3.1', endpoint: 'http://127.0.0.1:11434', timeoutMs: 60_000 });
  });

  it('reads the model, endpoint and timeout; ANTHROPIC_API_KEY is the fallback for anthropic only', () => {
    const env = { SERVICE_AI_MODEL: 'qwen2.5:7b', SERVICE_AI_ENDPOINT: 'http://gpu-box:11434/', SERVICE_AI_TIMEOUT_MS: '5000', ANTHROPIC_API_KEY: 'sk-ant' };
    expect(load({ ...env, SERVICE_AI_PROVIDER: 'ollama' }).ai).toEqual({ provider: 'ollama', apiKey: undefined, model: 'qwen2.5:7b', endpoint: 'http://gpu-box:11434', timeoutMs: 5000 });
    expect(load({ ...env, SERVICE_AI_PROVIDER: 'anthropic' }).ai?.apiKey).toBe('sk-ant');
    expect(load({ ...env, SERVICE_AI_PROVIDER: 'anthropic', SERVICE_AI_API_KEY: 'sk-own' }).ai?.apiKey).toBe('sk-own');
  });

  it('names what is wrong', () => {
    expect(load({ SERVICE_AI_PROVIDER: 'openai' }).errors).toEqual(['env: SERVICE_AI_PROVIDER: expected one of anthropic, ollama, got "openai"']);
    expect(load({ SERVICE_AI_PROVIDER: 'anthropic' }).errors).toEqual(['env: SERVICE_AI_API_KEY: required when SERVICE_AI_PROVIDER is anthropic (or set ANTHROPIC_API_KEY)']);
    expect(load({ SERVICE_AI_TIMEOUT_MS: '0' }).errors).toEqual(['env: SERVICE_AI_TIMEOUT_MS: expected an integer ≥ 1, got "0"']);
    expect(load({ SERVICE_AI_ENDPOINT: 'ftp://x' }).errors).toEqual(['env: SERVICE_AI_ENDPOINT: expected an http(s) URL, got "ftp://x"']);
  });

  it('never shows the key in `flakehouse config`', () => {
    expect(redactAiSettings(load({ SERVICE_AI_PROVIDER: 'anthropic', SERVICE_AI_API_KEY: 'sk-secret' }).ai)?.apiKey).toBe('[redacted]');
    expect(redactAiSettings(undefined)).toBeUndefined();
  });
});
