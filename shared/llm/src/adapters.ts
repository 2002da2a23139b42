import OpenAI from 'openai';
import { GoogleGenerativeAI, type Content, type FunctionDeclaration } from '@google/generative-ai';
import axios, { type AxiosError, type AxiosInstance } from 'axios';
import { Ollama } from 'ollama';
import { ExponentialBackoff, handleWhen, retry } from 'cockatiel';
import { LlmError, toLlmError, type ChatMessage, type ChatOptions, type ChatResult, type LlmProvider, type LlmSettings, type ProviderName, type ToolCall, type ToolSpec } from './provider';

/** Attempts per turn: the first plus two retries of timeouts, 429 and 5xx, exponential backoff from 500 ms. */
export const LLM_MAX_ATTEMPTS = 3;

const retryPolicy = (attempts: number, initialDelay: number) =>
  retry(
    handleWhen((e) => e instanceof LlmError && e.retryable),
    { maxAttempts: attempts - 1, backoff: new ExponentialBackoff({ initialDelay, maxDelay: 5_000 }) },
  );

/** Wraps an adapter so every turn gets bounded retries (cockatiel) and errors become LlmError. */
class Retrying implements LlmProvider {
  private readonly policy;
  constructor(
    private readonly inner: LlmProvider,
    attempts: number,
    initialDelayMs: number,
  ) {
    this.policy = retryPolicy(attempts, initialDelayMs);
  }
  get name() {
    return this.inner.name;
  }
  get model() {
    return this.inner.model;
  }
  chat(messages: ChatMessage[], tools: ToolSpec[], options?: ChatOptions): Promise<ChatResult> {
    return this.policy.execute(async () => {
      try {
        return await this.inner.chat(messages, tools, options);
      } catch (err) {
        throw toLlmError(this.inner.name, err);
      }
    });
  }
}

/** OpenAI-compatible chat completions (OpenAI, OpenRouter, Ollama /v1, LM Studio, vLLM) via the `openai` SDK. */
class OpenAiAdapter implements LlmProvider {
  readonly name = 'OPENAI' as const;
  private readonly client: OpenAI;
  constructor(
    readonly model: string,
    baseURL: string,
    apiKey: string | undefined,
    private readonly timeoutMs: number,
  ) {
    // SDK retries off: the Retrying wrapper owns the policy for every provider alike.
    this.client = new OpenAI({ baseURL, apiKey: apiKey || 'not-needed', timeout: timeoutMs, maxRetries: 0 });
  }

  async chat(messages: ChatMessage[], tools: ToolSpec[], options: ChatOptions = {}): Promise<ChatResult> {
    const body = {
      model: this.model,
      temperature: options.temperature,
      messages: messages.map((m): OpenAI.Chat.Completions.ChatCompletionMessageParam => {
        if (m.role === 'tool') return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
        if (m.role === 'assistant') return { role: 'assistant', content: m.content, ...(m.toolCalls?.length ? { tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) } : {}) };
        return { role: m.role, content: m.content };
      }),
      ...(tools.length ? { tools: tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.parameters } })) } : {}),
    };
    const started = Date.now();
    try {
      return await this.complete(body, options);
    } catch (err) {
      // The SDK reports its own abort as a connection error in some runtimes: the clock decides.
      if (err instanceof OpenAI.APIConnectionTimeoutError || (err instanceof OpenAI.APIConnectionError && Date.now() - started >= this.timeoutMs * 0.95)) throw new LlmError('timeout', 'OPENAI did not answer in time');
      if (err instanceof OpenAI.APIError && err.status) throw toLlmError('OPENAI', { status: err.status });
      throw err;
    }
  }

  private async complete(body: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming, options: ChatOptions): Promise<ChatResult> {
    if (!options.onText) {
      const res = await this.client.chat.completions.create(body);
      const msg = res.choices?.[0]?.message;
      if (!msg) throw new LlmError('bad_response', 'OPENAI answered without a message');
      return { content: msg.content ?? '', toolCalls: (msg.tool_calls ?? []).flatMap((c, i) => ('function' in c && c.function ? [{ id: c.id || `call_${i}`, name: c.function.name, arguments: c.function.arguments ?? '' }] : [])) };
    }
    const stream = await this.client.chat.completions.create({ ...body, stream: true });
    let content = '';
    const calls = new Map<number, ToolCall>();
    for await (const chunk of stream) {
      const delta = chunk.choices?.[0]?.delta;
      if (!delta) continue;
      if (delta.content) {
        content += delta.content;
        options.onText(delta.content);
      }
      for (const c of delta.tool_calls ?? []) {
        const cur = calls.get(c.index) ?? { id: c.id ?? `call_${c.index}`, name: '', arguments: '' };
        if (c.id) cur.id = c.id;
        if (c.function?.name) cur.name += c.function.name;
        if (c.function?.arguments) cur.arguments += c.function.arguments;
        calls.set(c.index, cur);
      }
    }
    return { content, toolCalls: [...calls.values()] };
  }
}

/** Ollama's native /api/chat via the `ollama` SDK (arguments come as objects; re-serialised). */
class OllamaAdapter implements LlmProvider {
  readonly name = 'OLLAMA' as const;
  private readonly client: Ollama;
  constructor(
    readonly model: string,
    host: string,
    timeoutMs: number,
  ) {
    this.client = new Ollama({ host, fetch: (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) }) });
  }

  async chat(messages: ChatMessage[], tools: ToolSpec[], options: ChatOptions = {}): Promise<ChatResult> {
    const res = await this.client.chat({
      model: this.model,
      stream: false,
      options: options.temperature === undefined ? undefined : { temperature: options.temperature },
      messages: messages.map((m) => {
        if (m.role === 'tool') return { role: 'tool', content: m.content, tool_name: m.name };
        if (m.role === 'assistant') return { role: 'assistant', content: m.content, tool_calls: m.toolCalls?.map((c) => ({ function: { name: c.name, arguments: safeObject(c.arguments) } })) };
        return { role: m.role, content: m.content };
      }),
      tools: tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters as never } })),
    });
    const msg = res?.message;
    if (!msg) throw new LlmError('bad_response', 'OLLAMA answered without a message');
    options.onText?.(msg.content ?? '');
    return { content: msg.content ?? '', toolCalls: (msg.tool_calls ?? []).map((c, i) => ({ id: `call_${i}`, name: c.function.name, arguments: typeof c.function.arguments === 'string' ? c.function.arguments : JSON.stringify(c.function.arguments ?? {}) })) };
  }
}

/** Google Gemini generateContent via `@google/generative-ai` (function calling). */
class GeminiAdapter implements LlmProvider {
  readonly name = 'GEMINI' as const;
  private readonly client: GoogleGenerativeAI;
  constructor(
    readonly model: string,
    apiKey: string,
    private readonly baseUrl: string | undefined,
    private readonly timeoutMs: number,
  ) {
    this.client = new GoogleGenerativeAI(apiKey);
  }

  async chat(messages: ChatMessage[], tools: ToolSpec[], options: ChatOptions = {}): Promise<ChatResult> {
    const system = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n');
    const model = this.client.getGenerativeModel(
      {
        model: this.model,
        ...(system ? { systemInstruction: system } : {}),
        ...(tools.length ? { tools: [{ functionDeclarations: tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }) as unknown as FunctionDeclaration) }] } : {}),
        generationConfig: options.temperature === undefined ? undefined : { temperature: options.temperature },
      },
      { timeout: this.timeoutMs, ...(this.baseUrl ? { baseUrl: this.baseUrl } : {}) },
    );
    const contents: Content[] = [];
    for (const m of messages) {
      if (m.role === 'system') continue;
      if (m.role === 'user') contents.push({ role: 'user', parts: [{ text: m.content }] });
      else if (m.role === 'assistant') contents.push({ role: 'model', parts: m.toolCalls?.length ? m.toolCalls.map((c) => ({ functionCall: { name: c.name, args: safeObject(c.arguments) } })) : [{ text: m.content }] });
      else if (m.role === 'tool') contents.push({ role: 'function', parts: [{ functionResponse: { name: m.name, response: { content: m.content } } }] });
    }
    const res = await model.generateContent({ contents });
    if (!Array.isArray(res.response?.candidates) || !res.response.candidates.length) throw new LlmError('bad_response', 'GEMINI answered without candidates');
    const calls = res.response.functionCalls() ?? [];
    let text = '';
    try {
      text = calls.length ? '' : res.response.text();
    } catch {
      text = '';
    }
    options.onText?.(text);
    return { content: text, toolCalls: calls.map((c, i) => ({ id: `call_${i}`, name: c.name, arguments: JSON.stringify(c.args ?? {}) })) };
  }
}

/**
 * Mistral chat completions (`POST {url}/v1/chat/completions`, bearer key) over plain HTTP with axios.
 * The vendor SDK (`@mistralai/mistralai`) ships as an ES module only, which the CommonJS services
 * and their Jest suites cannot load; the REST API is small and documented, so the SDK adds nothing.
 */
class MistralAdapter implements LlmProvider {
  readonly name = 'MISTRAL' as const;
  private readonly http: AxiosInstance;
  constructor(
    readonly model: string,
    apiKey: string,
    serverURL: string | undefined,
    timeoutMs: number,
  ) {
    this.http = axios.create({ baseURL: (serverURL || 'https://api.mistral.ai').replace(/\/+$/, ''), timeout: timeoutMs, maxRedirects: 0, headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' } });
  }

  async chat(messages: ChatMessage[], tools: ToolSpec[], options: ChatOptions = {}): Promise<ChatResult> {
    const body = {
      model: this.model,
      temperature: options.temperature,
      messages: messages.map((m) => {
        if (m.role === 'tool') return { role: 'tool', content: m.content, tool_call_id: m.toolCallId, name: m.name };
        if (m.role === 'assistant') return { role: 'assistant', content: m.content, ...(m.toolCalls?.length ? { tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}) };
        return { role: m.role, content: m.content };
      }),
      ...(tools.length ? { tools: tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })), tool_choice: 'auto' } : {}),
    };
    let data: MistralResponse;
    try {
      data = (await this.http.post<MistralResponse>('/v1/chat/completions', body)).data;
    } catch (err) {
      const e = err as AxiosError;
      // Only the status and code travel on: the axios error holds the request with the bearer key.
      throw toLlmError('MISTRAL', { status: e.response?.status, code: e.code, message: e.code === 'ECONNABORTED' ? 'timeout' : (e.code ?? '') });
    }
    const msg = data?.choices?.[0]?.message;
    if (!msg || typeof msg !== 'object') throw new LlmError('bad_response', 'MISTRAL answered without a message');
    const content = typeof msg.content === 'string' ? msg.content : Array.isArray(msg.content) ? msg.content.map((c) => (typeof c?.text === 'string' ? c.text : '')).join('') : '';
    options.onText?.(content);
    return {
      content,
      toolCalls: (Array.isArray(msg.tool_calls) ? msg.tool_calls : []).map((c, i) => ({ id: c?.id ?? `call_${i}`, name: String(c?.function?.name ?? ''), arguments: typeof c?.function?.arguments === 'string' ? c.function.arguments : JSON.stringify(c?.function?.arguments ?? {}) })),
    };
  }
}

interface MistralResponse {
  choices?: Array<{ message?: { content?: string | Array<{ text?: string }> | null; tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: unknown } }> } }>;
}

function safeObject(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * The configured provider, or null when the provider is NONE. Throws LlmError('not_configured')
 * when a required key or URL is missing. `retry.initialDelayMs` exists for tests.
 */
export function createLlmProvider(s: LlmSettings, retryOptions: { attempts?: number; initialDelayMs?: number } = {}): LlmProvider | null {
  const timeoutMs = Math.round(s.timeoutSeconds * 1000);
  let inner: LlmProvider;
  const need = (value: string | undefined, what: string, p: ProviderName): string => {
    if (!value) throw new LlmError('not_configured', `${p} needs ${what}: set it in Settings`);
    return value;
  };
  switch (s.provider) {
    case 'NONE':
      return null;
    case 'OPENAI':
      inner = new OpenAiAdapter(s.openai.model, need(s.openai.url, 'OPENAI_SERVER_URL', 'OPENAI'), s.openai.apiKey, timeoutMs);
      break;
    case 'OLLAMA':
      inner = new OllamaAdapter(s.ollama.model, need(s.ollama.url, 'OLLAMA_SERVER_URL', 'OLLAMA'), timeoutMs);
      break;
    case 'GEMINI':
      inner = new GeminiAdapter(s.gemini.model, need(s.gemini.apiKey, 'GEMINI_API_KEY', 'GEMINI'), s.gemini.url, timeoutMs);
      break;
    case 'MISTRAL':
      inner = new MistralAdapter(s.mistral.model, need(s.mistral.apiKey, 'MISTRAL_API_KEY', 'MISTRAL'), s.mistral.url, timeoutMs);
      break;
    default:
      throw new LlmError('not_configured', `Unknown AI provider ${String(s.provider)}`);
  }
  return new Retrying(inner, retryOptions.attempts ?? LLM_MAX_ATTEMPTS, retryOptions.initialDelayMs ?? 500);
}

/** Measures one short completion: reachability and latency of the configured model (the "test provider" action). */
export async function testLlmProvider(provider: LlmProvider): Promise<{ ok: boolean; provider: ProviderName; model: string; latency_ms: number; error: string | null }> {
  const t0 = performance.now();
  try {
    await provider.chat([{ role: 'user', content: 'Reply with the single word: ok' }], [], { temperature: 0 });
    return { ok: true, provider: provider.name, model: provider.model, latency_ms: Math.round(performance.now() - t0), error: null };
  } catch (err) {
    return { ok: false, provider: provider.name, model: provider.model, latency_ms: Math.round(performance.now() - t0), error: toLlmError(provider.name, err).message };
  }
}
