// The two model providers of the RCA stage, behind one small interface: Anthropic's Messages API
// through @anthropic-ai/sdk (a forced tool call whose input is the answer) and Ollama's chat API
// through fetch (`format` = the answer's JSON schema). Each request has a hard ceiling
// (SERVICE_AI_TIMEOUT_MS) and no automatic retries: the stage decides what to try again.
import type Anthropic from '@anthropic-ai/sdk';
import type * as AnthropicSdk from '@anthropic-ai/sdk';
import { z } from 'zod';
import type { AiProvider, AiSettings } from '../../config/ai.js';
import { RCA_OUTPUT_JSON_SCHEMA, estimateInputTokens, type RcaPrompt } from '../../domain/rca.js';

export interface LlmRequest {
  prompt: RcaPrompt;
  maxTokens: number;
  /** Aborted when the daemon stops. */
  signal: AbortSignal;
}

export interface LlmResponse {
  /** A tool call's input object, or the answer's text. */
  output: unknown;
  inputTokens: number;
  outputTokens: number;
  model: string;
}

export interface LlmProvider {
  readonly name: AiProvider;
  readonly model: string;
  complete(req: LlmRequest): Promise<LlmResponse>;
}

export type LlmErrorKind = 'timeout' | 'aborted' | 'http' | 'network' | 'bad_response';

export class LlmError extends Error {
  constructor(
    readonly kind: LlmErrorKind,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'LlmError';
  }
}

export function createProvider(settings: AiSettings): LlmProvider {
  return settings.provider === 'anthropic' ? new AnthropicProvider(settings) : new OllamaProvider(settings);
}

const TOOL_NAME = 'record_root_cause';

/**
 * The SDK, loaded at the first request: some 250 modules and ~20 MB that a process without RCA
 * (every one that loads the component list, an agent included) should not hold.
 */
let sdk: Promise<typeof AnthropicSdk> | undefined;
const loadSdk = (): Promise<typeof AnthropicSdk> => (sdk ??= import('@anthropic-ai/sdk'));

const anthropicResponse = z.object({
  model: z.string().optional(),
  content: z.array(z.looseObject({ type: z.string(), name: z.string().optional(), input: z.unknown().optional(), text: z.string().optional() })),
  usage: z.object({
    input_tokens: z.number(),
    output_tokens: z.number(),
    cache_creation_input_tokens: z.number().nullish(),
    cache_read_input_tokens: z.number().nullish(),
  }),
});

class AnthropicProvider implements LlmProvider {
  readonly name = 'anthropic' as const;
  readonly model: string;
  private client: Anthropic | undefined;

  constructor(private readonly settings: AiSettings) {
    this.model = settings.model;
  }

  async complete({ prompt, maxTokens, signal }: LlmRequest): Promise<LlmResponse> {
    const lib = await loadSdk();
    const settings = this.settings;
    this.client ??= new lib.default({ apiKey: settings.apiKey, baseURL: settings.endpoint, timeout: settings.timeoutMs, maxRetries: 0 });
    const timeout = AbortSignal.timeout(this.settings.timeoutMs);
    let raw: unknown;
    try {
      raw = await this.client.messages.create(
        {
          model: this.model,
          max_tokens: maxTokens,
          system: prompt.system,
          messages: [{ role: 'user', content: prompt.user }],
          tools: [{ name: TOOL_NAME, description: 'Record the root-cause analysis of the failing test.', input_schema: RCA_OUTPUT_JSON_SCHEMA }],
          tool_choice: { type: 'tool', name: TOOL_NAME },
        },
        { signal: AbortSignal.any([signal, timeout]) },
      );
    } catch (err) {
      throw anthropicError(lib, err, timeout, signal);
    }
    const parsed = anthropicResponse.safeParse(raw);
    if (!parsed.success) throw new LlmError('bad_response', `unexpected Messages API response: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const msg = parsed.data;
    const tool = msg.content.find((b) => b.type === 'tool_use' && b.name === TOOL_NAME);
    const text = msg.content.flatMap((b) => (b.type === 'text' && b.text !== undefined ? [b.text] : [])).join('');
    const u = msg.usage;
    return {
      // Without the tool call (a proxy that drops tools), the text may still hold the JSON.
      output: tool ? tool.input : text,
      inputTokens: u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0),
      outputTokens: u.output_tokens,
      model: msg.model ?? this.model,
    };
  }
}

function anthropicError(lib: typeof AnthropicSdk, err: unknown, timeout: AbortSignal, stop: AbortSignal): LlmError {
  const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } = lib;
  if (err instanceof APIConnectionTimeoutError || (err instanceof APIUserAbortError && timeout.aborted && !stop.aborted)) return new LlmError('timeout', 'timeout');
  if (err instanceof APIUserAbortError) return new LlmError('aborted', 'aborted');
  if (err instanceof APIConnectionError) return new LlmError('network', `network: ${err.message}`);
  if (err instanceof APIError) {
    const status: number | undefined = typeof err.status === 'number' ? err.status : undefined;
    return new LlmError('http', `http ${status ?? '?'}: ${err.message}`.slice(0, 500), status);
  }
  return new LlmError('network', err instanceof Error ? err.message : String(err));
}

const ollamaResponse = z.object({
  model: z.string().optional(),
  message: z.object({ content: z.string() }),
  prompt_eval_count: z.number().optional(),
  eval_count: z.number().optional(),
});

class OllamaProvider implements LlmProvider {
  readonly name = 'ollama' as const;
  readonly model: string;

  constructor(private readonly settings: AiSettings) {
    this.model = settings.model;
  }

  async complete({ prompt, maxTokens, signal }: LlmRequest): Promise<LlmResponse> {
    const timeout = AbortSignal.timeout(this.settings.timeoutMs);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.settings.apiKey) headers.authorization = `Bearer ${this.settings.apiKey}`;
    let body: unknown;
    try {
      const res = await fetch(`${this.settings.endpoint}/api/chat`, {
        method: 'POST',
        headers,
        redirect: 'error',
        signal: AbortSignal.any([signal, timeout]),
        body: JSON.stringify({
          model: this.model,
          stream: false,
          format: RCA_OUTPUT_JSON_SCHEMA,
          options: { temperature: 0, num_predict: maxTokens },
          messages: [
            { role: 'system', content: prompt.system },
            { role: 'user', content: prompt.user },
          ],
        }),
      });
      if (!res.ok) throw new LlmError('http', `http ${res.status}: ${(await res.text()).slice(0, 300)}`, res.status);
      body = await res.json();
    } catch (err) {
      if (err instanceof LlmError) throw err;
      if (timeout.aborted && !signal.aborted) throw new LlmError('timeout', 'timeout');
      if (signal.aborted) throw new LlmError('aborted', 'aborted');
      if (err instanceof SyntaxError) throw new LlmError('bad_response', `not JSON: ${err.message}`);
      throw new LlmError('network', `network: ${err instanceof Error ? err.message : String(err)}`);
    }
    const parsed = ollamaResponse.safeParse(body);
    if (!parsed.success) throw new LlmError('bad_response', `unexpected chat API response: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const r = parsed.data;
    return {
      output: r.message.content,
      // Ollama leaves prompt_eval_count out when the whole prompt came from its cache: count our estimate then.
      inputTokens: r.prompt_eval_count ?? estimateInputTokens(prompt),
      outputTokens: r.eval_count ?? 0,
      model: r.model ?? this.model,
    };
  }
}
