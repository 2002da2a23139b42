/**
 * One small interface over the LLM providers polyphony supports (instant playlists and cluster
 * names): any OpenAI-compatible chat-completions endpoint, Ollama's native API, Google Gemini and
 * Mistral, each through its vendor's SDK. Tool calling is normalised: a call has an id, a tool name
 * and its arguments as raw JSON text (always validated by the caller: model output is untrusted).
 */

export type ProviderName = 'OPENAI' | 'OLLAMA' | 'GEMINI' | 'MISTRAL';

/** A tool the model may call; `parameters` is a JSON Schema object. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ToolCall {
  id: string;
  name: string;
  /** Raw JSON text as the model produced it (may be malformed). */
  arguments: string;
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

export interface ChatResult {
  content: string;
  toolCalls: ToolCall[];
}

export interface ChatOptions {
  temperature?: number;
  /** Called with each text fragment as it arrives (streaming), when the adapter can stream. */
  onText?: (fragment: string) => void;
}

export interface LlmProvider {
  readonly name: ProviderName;
  readonly model: string;
  /** One completion turn; throws LlmError. */
  chat(messages: ChatMessage[], tools: ToolSpec[], options?: ChatOptions): Promise<ChatResult>;
}

export type LlmErrorKind = 'timeout' | 'rate_limited' | 'unavailable' | 'auth' | 'bad_response' | 'not_configured';

/**
 * A provider failure with a message safe to show a user (no key, no request body). `retryable`
 * errors (timeout, 429, 5xx, connection) are retried a bounded number of times by the caller.
 */
export class LlmError extends Error {
  constructor(
    readonly kind: LlmErrorKind,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'LlmError';
  }

  get retryable(): boolean {
    return this.kind === 'timeout' || this.kind === 'rate_limited' || this.kind === 'unavailable';
  }
}

/** Provider settings (from the config store; see shared/contracts/src/settings.ts). */
export interface LlmSettings {
  provider: ProviderName | 'NONE';
  timeoutSeconds: number;
  openai: { url: string; model: string; apiKey?: string };
  ollama: { url: string; model: string };
  gemini: { model: string; apiKey?: string; url?: string };
  mistral: { model: string; apiKey?: string; url?: string };
}

/**
 * Maps any thrown value of an SDK call to an LlmError: status 401/403 auth, 429 rate limit,
 * 5xx/connection unavailable, aborts/timeouts timeout. Messages name the provider and status only.
 */
export function toLlmError(provider: ProviderName, err: unknown): LlmError {
  if (err instanceof LlmError) return err;
  const e = err as { status?: number; statusCode?: number; status_code?: number; name?: string; code?: string; message?: string; cause?: { code?: string } };
  const status = e?.status ?? e?.statusCode ?? e?.status_code ?? statusFromMessage(e?.message);
  const name = `${e?.name ?? ''} ${e?.code ?? ''} ${e?.cause?.code ?? ''}`;
  if (/timeout|timedout|abort/i.test(name) || /timed? ?out|aborted/i.test(e?.message ?? '')) return new LlmError('timeout', `${provider} did not answer in time`);
  if (status === 401 || status === 403) return new LlmError('auth', `${provider} refused the credentials (HTTP ${status})`, status);
  if (status === 429) return new LlmError('rate_limited', `${provider} is rate limiting requests (HTTP 429)`, status);
  if (status !== undefined && status >= 500) return new LlmError('unavailable', `${provider} failed (HTTP ${status})`, status);
  if (status !== undefined && status >= 400) return new LlmError('bad_response', `${provider} rejected the request (HTTP ${status})`, status);
  if (/ECONNREFUSED|ENOTFOUND|ECONNRESET|EAI_AGAIN|fetch failed|Connection error/i.test(`${name} ${e?.message ?? ''}`)) return new LlmError('unavailable', `${provider} is unreachable`);
  return new LlmError('bad_response', `${provider} answered something unusable`);
}

function statusFromMessage(message: string | undefined): number | undefined {
  const m = /\[(\d{3})[^\]]*\]|status(?: code)?:? (\d{3})|\b(\d{3}) (?:Too Many|Unauthorized|Forbidden|Internal|Bad Gateway|Service Unavailable)/i.exec(message ?? '');
  const v = m?.[1] ?? m?.[2] ?? m?.[3];
  return v ? Number(v) : undefined;
}
