// The AI root-cause stage's deployment settings (docs/architecture.md "Configuration"): environment only,
// like the rest of ServerSettings, because they hold credentials and belong to the instance.
// Without SERVICE_AI_PROVIDER there are none and RCA is off, whatever a project's `ai.rca` says.
import { z } from 'zod';
import { ConfigError } from '../../client/src/contract/config/errors.js';
import type { Field } from './service-yml.js';
import { envReader, intField, stringField, urlField } from './service-yml.js';

export const AI_PROVIDERS = ['anthropic', 'ollama'] as const;
export type AiProvider = (typeof AI_PROVIDERS)[number];

export const AI_DEFAULT_MODELS: Record<AiProvider, string> = { anthropic: 'claude-sonnet-5-5', ollama: 'llama3.1' };
export const AI_DEFAULT_ENDPOINTS: Record<AiProvider, string> = { anthropic: 'https://api.anthropic.com', ollama: 'http://127.0.0.1:11434' };
export const AI_DEFAULT_TIMEOUT_MS = 60_000;

export interface AiSettings {
  provider: AiProvider;
  /** SERVICE_AI_API_KEY; for anthropic also ANTHROPIC_API_KEY. Optional for ollama (sent as a bearer token, e.g. to a proxy). */
  apiKey?: string;
  model: string;
  /** Base URL without a trailing slash. */
  endpoint: string;
  /** Ceiling of one model request. */
  timeoutMs: number;
}

export const AI_ENV_VARS: readonly { name: string; description: string; default?: string }[] = [
  { name: 'SERVICE_AI_PROVIDER', description: '`anthropic` or `ollama`; unset keeps RCA off whatever `ai.rca` says' },
  { name: 'SERVICE_AI_API_KEY', description: 'provider key; for anthropic `ANTHROPIC_API_KEY` is read when it is unset (required for anthropic)' },
  { name: 'SERVICE_AI_MODEL', description: 'model id', default: `${AI_DEFAULT_MODELS.anthropic} (anthropic), ${AI_DEFAULT_MODELS.ollama} (ollama)` },
  { name: 'SERVICE_AI_ENDPOINT', description: 'base URL of the provider API (a proxy, a self-hosted Ollama)', default: `${AI_DEFAULT_ENDPOINTS.anthropic}, ${AI_DEFAULT_ENDPOINTS.ollama}` },
  { name: 'SERVICE_AI_TIMEOUT_MS', description: 'ceiling of one model request (ms); a request cut off records the analysis as failed (`timeout`)', default: String(AI_DEFAULT_TIMEOUT_MS) },
];

const providerField: Field<AiProvider> = {
  kind: 'string',
  desc: `one of ${AI_PROVIDERS.join(', ')}`,
  schema: z.preprocess((v) => (typeof v === 'string' ? v.toLowerCase() : v), z.enum(AI_PROVIDERS)),
};

/** Reads the AI variables, appending every problem to `errors`; undefined when no provider is set. */
export function loadAiSettings(env: NodeJS.ProcessEnv, errors: ConfigError[]): AiSettings | undefined {
  const read = envReader(env, errors);
  // All are checked even without a provider, so a typo shows before it matters.
  const provider = read('SERVICE_AI_PROVIDER', providerField);
  const model = read('SERVICE_AI_MODEL', stringField('a model id'));
  const endpoint = read('SERVICE_AI_ENDPOINT', urlField());
  const timeoutMs = read('SERVICE_AI_TIMEOUT_MS', intField(1)) ?? AI_DEFAULT_TIMEOUT_MS;
  const key = read('SERVICE_AI_API_KEY', { ...stringField(), verbatim: true });
  if (provider === undefined) return undefined;
  // ANTHROPIC_API_KEY only ever goes to Anthropic's API, never to another provider's endpoint.
  const apiKey = key ?? (provider === 'anthropic' ? read('ANTHROPIC_API_KEY', { ...stringField(), verbatim: true }) : undefined);
  if (provider === 'anthropic' && apiKey === undefined) {
    errors.push(new ConfigError('env', 'SERVICE_AI_API_KEY', 'required when SERVICE_AI_PROVIDER is anthropic (or set ANTHROPIC_API_KEY)'));
  }
  return {
    provider,
    apiKey,
    model: model ?? AI_DEFAULT_MODELS[provider],
    endpoint: (endpoint ?? AI_DEFAULT_ENDPOINTS[provider]).replace(/\/+$/, ''),
    timeoutMs,
  };
}

/** For `flakehouse config`: the key is never printed. */
export function redactAiSettings(ai: AiSettings | undefined): AiSettings | undefined {
  return ai && { ...ai, apiKey: ai.apiKey === undefined ? undefined : '[redacted]' };
}

/**
 * `ai.rca` as the instance applies it (for `flakehouse config`): a configured `true` does nothing
 * without a provider, and saying `true` there would tell an operator that RCA runs when it is off.
 */
export function effectiveAiRca(configured: boolean, ai: AiSettings | undefined): { value: boolean; reason?: string } {
  if (configured && ai === undefined) return { value: false, reason: 'off: no AI provider, SERVICE_AI_PROVIDER is not set' };
  return { value: configured };
}
