import { LlmError, createLlmProvider, type ChatMessage, type LlmProvider, type LlmSettings } from '@polyphony/llm';
import type { Logger } from '@polyphony/platform';
import type { RequestScope } from '../core/scope';
import { artistKey } from '../core/text';
import { interpret } from './interpreter';
import { offeredTools, runTool, validateToolCall, type ChatSong, type ChatToolDeps, type ChatToolName } from './tools';

/** Tool-call rounds per request (reference AI_MAX_TOOL_CALLS), songs per artist, default and largest size. */
export const AI_MAX_TOOL_CALLS = 4;
export const CHAT_MAX_SONGS_PER_ARTIST = 5;
export const CHAT_DEFAULT_SIZE = 25;
export const CHAT_MAX_SIZE = 100;
/** Tool temperature (reference 0.2): mostly deterministic tool choice. */
const TOOL_TEMPERATURE = 0.2;

/** Reads the AI provider settings (the registry's config store). */
export type AiSettingsSource = () => Promise<LlmSettings>;

/** One tool call as reported to the caller. */
export interface ToolCallReport {
  tool: string;
  arguments: Record<string, unknown>;
  songs: number;
  error?: string;
}

/** The plugin shape (`{response:{ai_provider_used, query_results, message}}` is read by Lyrion and Jellyfin). */
export interface ChatPlaylistResponse {
  response: {
    ai_provider_used: string;
    ai_model_used: string | null;
    query_results: ChatSong[];
    message: string;
    tool_calls: ToolCallReport[];
  };
}

/** Progress the streaming endpoint forwards. */
export type ChatEvent = { type: 'status'; message: string } | { type: 'text'; text: string };

/**
 * Instant playlists from a chat message (spec: Selecting a server at runtime 8; reference
 * `/chat/api/chatPlaylist`). With a configured LLM, the model is offered the tools of
 * `tools.ts` for at most AI_MAX_TOOL_CALLS rounds; its calls are validated like requests (unknown
 * tool, bad JSON, bad arguments: reported to the model and to the caller, never executed) and run
 * against this service's own domain with the caller's scope; a repeated identical call stops the
 * loop. Without an LLM, or when it fails, the rule-based interpreter plans the same tools
 * (`ai_provider_used: "NONE"`). Results are merged round-robin across calls, de-duplicated, capped
 * per artist, and only songs of the selected server in its ids are returned.
 */
export class InstantPlaylistService {
  constructor(
    private readonly deps: ChatToolDeps,
    private readonly settings: AiSettingsSource,
    private readonly logger: Logger,
    private readonly providerFactory: (s: LlmSettings) => LlmProvider | null = (s) => createLlmProvider(s),
  ) {}

  async run(scope: RequestScope, userInput: string, size = CHAT_DEFAULT_SIZE, onEvent: (e: ChatEvent) => void = () => undefined): Promise<ChatPlaylistResponse> {
    let provider: LlmProvider | null = null;
    let why = '';
    try {
      provider = this.providerFactory(await this.settings());
    } catch (err) {
      why = err instanceof LlmError ? err.message : 'the AI settings could not be read';
    }
    if (provider) {
      try {
        return await this.withModel(scope, provider, userInput, size, onEvent);
      } catch (err) {
        const e = err instanceof LlmError ? err : new LlmError('bad_response', `${provider.name} failed`);
        this.logger.warn('instant playlist: model failed, rule-based fallback', { provider: provider.name, kind: e.kind });
        why = e.message;
      }
    }
    onEvent({ type: 'status', message: 'Interpreting your request without an AI model' });
    const plan = await interpret(userInput, this.deps.catalog, Boolean(this.deps.text));
    const lists: ChatSong[][] = [];
    const reports: ToolCallReport[] = [];
    for (const call of plan) {
      onEvent({ type: 'status', message: `Looking for ${call.because}` });
      const songs = await runTool(scope, call.tool, call.args, this.deps).catch(() => [] as ChatSong[]);
      lists.push(songs);
      reports.push({ tool: call.tool, arguments: call.args, songs: songs.length });
    }
    const results = merge(lists, size);
    const understood = plan.length ? `I looked for ${plan.map((p) => p.because).join('; ')} and found ${results.length} songs on this server.` : 'I could not find a song, artist, mood, tempo or year of your library in the request.';
    const hint = why ? `The AI model was not used (${why}).` : 'No AI model is configured: an LLM understands requests much better. Set AI_MODEL_PROVIDER and its model (and key) in Settings.';
    return { response: { ai_provider_used: 'NONE', ai_model_used: null, query_results: results, message: `${understood} ${hint}`, tool_calls: reports } };
  }

  private async withModel(scope: RequestScope, provider: LlmProvider, userInput: string, size: number, onEvent: (e: ChatEvent) => void): Promise<ChatPlaylistResponse> {
    const tools = offeredTools(this.deps);
    const messages: ChatMessage[] = [
      {
        role: 'system',
        content:
          `You build music playlists from the user's library. Call the tools to find songs (you may call several, at most ${AI_MAX_TOOL_CALLS} rounds), ` +
          'using titles and artists exactly as the user wrote them. When you have enough songs, answer with one short sentence describing the playlist. Never invent songs.',
      },
      { role: 'user', content: userInput },
    ];
    const lists: ChatSong[][] = [];
    const reports: ToolCallReport[] = [];
    const seen = new Set<string>();
    let final = '';
    let stopped = '';
    for (let round = 0; round < AI_MAX_TOOL_CALLS; round++) {
      onEvent({ type: 'status', message: round === 0 ? `Asking ${provider.name}` : `Asking ${provider.name} again (round ${round + 1})` });
      const res = await provider.chat(messages, tools, { temperature: TOOL_TEMPERATURE, onText: (t) => t && onEvent({ type: 'text', text: t }) });
      if (!res.toolCalls.length) {
        final = res.content.trim();
        break;
      }
      messages.push({ role: 'assistant', content: res.content, toolCalls: res.toolCalls });
      let repeated = false;
      for (const call of res.toolCalls.slice(0, 8)) {
        const v = validateToolCall(call.name, call.arguments, this.deps);
        if (!v.ok) {
          reports.push({ tool: call.name.slice(0, 60), arguments: {}, songs: 0, error: v.error });
          messages.push({ role: 'tool', toolCallId: call.id, name: call.name.slice(0, 60), content: `Error: ${v.error}` });
          continue;
        }
        const signature = `${v.tool}:${JSON.stringify(v.args)}`;
        if (seen.has(signature)) {
          repeated = true;
          reports.push({ tool: v.tool, arguments: v.args as Record<string, unknown>, songs: 0, error: 'repeated call: stopped' });
          messages.push({ role: 'tool', toolCallId: call.id, name: v.tool, content: 'Error: this exact call was already made' });
          continue;
        }
        seen.add(signature);
        onEvent({ type: 'status', message: `Running ${v.tool}` });
        const songs = await runTool(scope, v.tool as ChatToolName, v.args, this.deps);
        lists.push(songs);
        reports.push({ tool: v.tool, arguments: v.args as Record<string, unknown>, songs: songs.length });
        messages.push({ role: 'tool', toolCallId: call.id, name: v.tool, content: JSON.stringify({ found: songs.length, songs: songs.slice(0, 15).map((s) => `${s.title ?? '?'} - ${s.author ?? '?'}`) }) });
      }
      if (repeated) {
        stopped = 'The model repeated a call, so I stopped it there.';
        break;
      }
      if (round === AI_MAX_TOOL_CALLS - 1) stopped = `The model reached the limit of ${AI_MAX_TOOL_CALLS} tool rounds.`;
    }
    const results = merge(lists, size);
    if (!results.length && !reports.some((r) => r.songs > 0)) {
      // The model found nothing usable: let the interpreter try (reported as a model failure).
      throw new LlmError('bad_response', `${provider.name} found no songs with its tool calls`);
    }
    const message = [final || `Here are ${results.length} songs for "${userInput.slice(0, 80)}".`, stopped].filter(Boolean).join(' ');
    return { response: { ai_provider_used: provider.name, ai_model_used: provider.model, query_results: results, message, tool_calls: reports } };
  }
}

/**
 * Round-robin over the tool results (so every call contributes early), first occurrence of a song
 * wins, at most CHAT_MAX_SONGS_PER_ARTIST per artist, at most `size` songs.
 */
export function merge(lists: ChatSong[][], size: number): ChatSong[] {
  const out: ChatSong[] = [];
  const ids = new Set<string>();
  const perArtist = new Map<string, number>();
  const longest = Math.max(0, ...lists.map((l) => l.length));
  for (let i = 0; i < longest && out.length < size; i++) {
    for (const list of lists) {
      const s = list[i];
      if (!s || ids.has(s.item_id)) continue;
      const a = artistKey(s.author);
      if ((perArtist.get(a) ?? 0) >= CHAT_MAX_SONGS_PER_ARTIST) continue;
      ids.add(s.item_id);
      perArtist.set(a, (perArtist.get(a) ?? 0) + 1);
      out.push(s);
      if (out.length >= size) break;
    }
  }
  return out;
}
