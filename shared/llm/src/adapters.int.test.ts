import { createFakeLlm, type StartedFake } from '@polyphony/testkit';
import { createLlmProvider, testLlmProvider } from './adapters';
import { LlmError, type LlmSettings, type ProviderName, type ToolSpec } from './provider';
import { validClusterName } from './naming';

/** The real adapters (vendor SDKs and axios) against a protocol-faithful fake server. */
describe('LLM adapters against the fake LLM server', () => {
  const fake = createFakeLlm();
  let started: StartedFake;
  beforeAll(async () => {
    started = await fake.start();
  });
  afterAll(async () => started?.close());
  beforeEach(() => fake.core.clearRequests());

  const KEY = 'sk-never-in-a-message-123';
  const settings = (provider: ProviderName, timeoutSeconds = 5): LlmSettings => ({
    provider,
    timeoutSeconds,
    openai: { url: `${started.url}/v1`, model: 'gpt-test', apiKey: KEY },
    ollama: { url: started.url, model: 'qwen-test' },
    gemini: { url: started.url, model: 'gemini-test', apiKey: KEY },
    mistral: { url: started.url, model: 'mistral-test', apiKey: KEY },
  });
  const tools: ToolSpec[] = [{ name: 'song_similarity', description: 'Songs like a song', parameters: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] } }];
  const PROVIDERS: ProviderName[] = ['OPENAI', 'OLLAMA', 'GEMINI', 'MISTRAL'];

  it.each(PROVIDERS)('When %s asks for a tool, then the call comes back normalised and the tools were offered', async (p) => {
    fake.setScript([{ toolCalls: [{ name: 'song_similarity', arguments: { title: 'Heroes Rite' } }] }, { content: 'Here is your playlist.' }]);
    const provider = createLlmProvider(settings(p))!;
    const first = await provider.chat([{ role: 'system', content: 'You build playlists.' }, { role: 'user', content: 'music like Heroes Rite' }], tools, { temperature: 0.2 });
    expect(first.toolCalls).toEqual([expect.objectContaining({ name: 'song_similarity' })]);
    expect(JSON.parse(first.toolCalls[0]!.arguments)).toEqual({ title: 'Heroes Rite' });
    const second = await provider.chat(
      [{ role: 'user', content: 'music like Heroes Rite' }, { role: 'assistant', content: '', toolCalls: first.toolCalls }, { role: 'tool', toolCallId: first.toolCalls[0]!.id, name: 'song_similarity', content: '3 songs' }],
      tools,
    );
    expect(second).toEqual({ content: 'Here is your playlist.', toolCalls: [] });
    const sent = JSON.stringify(fake.bodies[0]);
    expect(sent).toContain('song_similarity');
    expect(JSON.stringify(fake.bodies[1])).toContain('3 songs');
  });

  it.each(PROVIDERS)('When %s answers 429 twice, then the turn is retried and succeeds; 401 is not retried', async (p) => {
    fake.setScript([{ status: 429 }, { status: 503 }, { content: 'ok' }]);
    const provider = createLlmProvider(settings(p), { initialDelayMs: 10 })!;
    expect((await provider.chat([{ role: 'user', content: 'hi' }], [])).content).toBe('ok');
    expect(fake.bodies).toHaveLength(3);
    fake.core.clearRequests();
    fake.setScript([{ status: 401 }, { content: 'never' }]);
    const err = await provider.chat([{ role: 'user', content: 'hi' }], []).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LlmError);
    expect((err as LlmError).kind).toBe('auth');
    expect((err as LlmError).message).not.toContain(KEY);
    expect(fake.bodies).toHaveLength(1);
  });

  it.each(PROVIDERS)('When %s is too slow or answers a malformed body, then the error says so without the key', async (p) => {
    fake.setScript([{ delayMs: 1500, content: 'late' }]);
    const slow = createLlmProvider(settings(p, 0.3), { attempts: 1 })!;
    const timeout = await slow.chat([{ role: 'user', content: 'hi' }], []).catch((e: unknown) => e);
    expect((timeout as LlmError).kind).toBe('timeout');
    fake.setScript([{ malformed: true }]);
    const bad = await createLlmProvider(settings(p), { attempts: 1 })!.chat([{ role: 'user', content: 'hi' }], []).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(LlmError);
    expect((bad as LlmError).kind).toBe('bad_response');
    expect(String((bad as Error).message)).not.toContain(KEY);
  });

  it('When OpenAI streams, then text fragments arrive in order and tool calls are assembled', async () => {
    fake.setScript([{ content: 'Calm orchestral picks ', toolCalls: [{ name: 'song_similarity', arguments: '{"title":"Wanderer"}' }] }]);
    const fragments: string[] = [];
    const res = await createLlmProvider(settings('OPENAI'))!.chat([{ role: 'user', content: 'calm' }], tools, { onText: (f) => fragments.push(f) });
    expect(fragments.join('')).toBe('Calm orchestral picks ');
    expect(res.toolCalls).toEqual([expect.objectContaining({ name: 'song_similarity', arguments: '{"title":"Wanderer"}' })]);
  });

  it('When the provider is tested, then reachability and latency are reported; NONE and a missing key are clear', async () => {
    fake.setScript([{ content: 'ok' }]);
    const report = await testLlmProvider(createLlmProvider(settings('GEMINI'))!);
    expect(report).toMatchObject({ ok: true, provider: 'GEMINI', model: 'gemini-test', error: null });
    expect(report.latency_ms).toBeGreaterThanOrEqual(0);
    expect(createLlmProvider({ ...settings('OPENAI'), provider: 'NONE' })).toBeNull();
    expect(() => createLlmProvider({ ...settings('MISTRAL'), mistral: { model: 'm' } })).toThrow(/MISTRAL_API_KEY/);
  });

  it('When a model names a cluster, then only short, clean, unique names pass', () => {
    expect(validClusterName('"Moonlit Strings."', new Set())).toBe('Moonlit Strings');
    expect(validClusterName('Moonlit Strings', new Set(['moonlit strings']))).toBeNull();
    expect(validClusterName('<script>alert(1)</script>', new Set())).toBeNull();
    expect(validClusterName('x'.repeat(41), new Set())).toBeNull();
  });
});
