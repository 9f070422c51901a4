// The two model providers against local servers speaking their wire formats: what each sends,
// what it reads back (answer and usage), and how failures come out (timeout, HTTP error, abort,
// malformed answer), which decide how an analysis is recorded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AiSettings } from '../../src/config/ai.js';
import { LlmError, createProvider } from '../../src/exporters/rca/providers.js';
import { startHttpSink, type HttpSink } from '../helpers/peers.js';

const prompt = { system: 'You are a test.', user: 'Error: expected 1 to be 2' };
const answer = { summary: 's', likelyCause: 'c', suggestedAction: 'a', confidence: 0.4 };

async function failure(p: Promise<unknown>): Promise<LlmError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LlmError);
  return err as LlmError;
}

describe.each(['anthropic', 'ollama'] as const)('%s provider', (provider) => {
  let sink: HttpSink;
  const settings = (timeoutMs = 10_000): AiSettings => ({ provider, apiKey: 'key-123', model: 'm-1', endpoint: sink.url, timeoutMs });

  beforeAll(async () => {
    sink = await startHttpSink();
  });

  afterAll(async () => {
    await sink.close();
  });

  it('reads the answer and the provider-counted usage', async () => {
    sink.respond = () =>
      provider === 'anthropic'
        ? { status: 200, body: { id: 'msg', type: 'message', role: 'assistant', model: 'm-1-2026', content: [{ type: 'tool_use', id: 't', name: 'record_root_cause', input: answer }], stop_reason: 'tool_use', usage: { input_tokens: 120, output_tokens: 30, cache_read_input_tokens: 5 } } }
        : { status: 200, body: { model: 'm-1', message: { role: 'assistant', content: JSON.stringify(answer) }, done: true, prompt_eval_count: 110, eval_count: 25 } };
    const res = await createProvider(settings()).complete({ prompt, maxTokens: 300, signal: new AbortController().signal });
    if (provider === 'anthropic') expect(res).toEqual({ output: answer, inputTokens: 125, outputTokens: 30, model: 'm-1-2026' });
    else expect(res).toEqual({ output: JSON.stringify(answer), inputTokens: 110, outputTokens: 25, model: 'm-1' });
    const req = sink.requests.at(-1)!;
    expect(req.path).toBe(provider === 'anthropic' ? '/v1/messages' : '/api/chat');
    expect(provider === 'anthropic' ? req.json.max_tokens : req.json.options.num_predict).toBe(300);
    expect(String(req.headers.authorization ?? req.headers['x-api-key'])).toContain('key-123');
  });

  it('a request that outlives SERVICE_AI_TIMEOUT_MS is a timeout', async () => {
    sink.respond = () => 'hang';
    const err = await failure(createProvider(settings(150)).complete({ prompt, maxTokens: 300, signal: new AbortController().signal }));
    expect(err.kind).toBe('timeout');
    expect(err.message).toBe('timeout');
  });

  it('stopping the daemon aborts a request in flight (not a timeout)', async () => {
    sink.respond = () => 'hang';
    const stop = new AbortController();
    const pending = createProvider(settings()).complete({ prompt, maxTokens: 300, signal: stop.signal });
    const before = sink.requests.length;
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (sink.requests.length > before) resolve();
        else setTimeout(check, 10);
      };
      check();
    });
    stop.abort();
    expect((await failure(pending)).kind).toBe('aborted');
  });

  it('an HTTP error names its status; no retry is made', async () => {
    sink.respond = () => ({ status: 500, body: { type: 'error', error: { type: 'api_error', message: 'overloaded' } } });
    const before = sink.requests.length;
    const err = await failure(createProvider(settings()).complete({ prompt, maxTokens: 300, signal: new AbortController().signal }));
    expect(err.kind).toBe('http');
    expect(err.status).toBe(500);
    expect(err.message).toMatch(/^http 500/);
    expect(sink.requests.length - before).toBe(1);
  });

  it('an answer of the wrong shape is a bad response', async () => {
    sink.respond = () => ({ status: 200, body: { hello: 'world' } });
    expect((await failure(createProvider(settings()).complete({ prompt, maxTokens: 300, signal: new AbortController().signal }))).kind).toBe('bad_response');
  });
});
