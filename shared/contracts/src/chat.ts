import { defineRoute, ServerParam } from './openapi';
import { CreatePlaylistBody, CreatePlaylistResponse } from './playlists';
import { z } from './zod';

/** Longest chat message accepted (characters). */
export const CHAT_INPUT_MAX = 2000;

/** Body of POST /chat/api/chatPlaylist (and the stream): the user's words; other reference fields are ignored. */
export const ChatPlaylistBody = z
  .object({
    userInput: z.string().trim().min(1, 'userInput is empty').max(CHAT_INPUT_MAX, `userInput is longer than ${CHAT_INPUT_MAX} characters`),
    server: ServerParam,
    /** Songs wanted (default 25, at most 100). */
    n: z.coerce.number().int().min(1).max(100).optional(),
  })
  .passthrough()
  .openapi('ChatPlaylistBody');

export const ChatSongDto = z.object({ item_id: z.string(), title: z.string().nullable(), author: z.string().nullable(), album: z.string().nullable() }).openapi('ChatSong');

export const ChatPlaylistResponse = z
  .object({
    response: z.object({
      /** NONE when the rule-based interpreter answered. */
      ai_provider_used: z.string(),
      ai_model_used: z.string().nullable(),
      query_results: z.array(ChatSongDto),
      message: z.string(),
      tool_calls: z.array(z.object({ tool: z.string(), arguments: z.record(z.unknown()), songs: z.number(), error: z.string().optional() })),
    }),
  })
  .openapi('ChatPlaylistResponse');

/** GET /internal/settings/ai (registry): the provider settings with their keys, for services only. */
export const AiSettingsDto = z.object({
  provider: z.enum(['NONE', 'OPENAI', 'OLLAMA', 'GEMINI', 'MISTRAL']),
  timeoutSeconds: z.number(),
  openai: z.object({ url: z.string(), model: z.string(), apiKey: z.string().optional() }),
  ollama: z.object({ url: z.string(), model: z.string() }),
  gemini: z.object({ model: z.string(), apiKey: z.string().optional(), url: z.string().optional() }),
  mistral: z.object({ model: z.string(), apiKey: z.string().optional(), url: z.string().optional() }),
});
export type AiSettingsDto = z.infer<typeof AiSettingsDto>;

export const AiTestResponse = z.object({ ok: z.boolean(), provider: z.string(), model: z.string().nullable(), latency_ms: z.number(), error: z.string().nullable() }).openapi('AiTestResult');

export const chatRoutes = {
  chatPlaylist: defineRoute({ method: 'post', path: '/chat/api/chatPlaylist', summary: 'Instant playlist from a chat message (LLM with tools, or the rule-based interpreter); songs of the selected server in its ids', tags: ['chat'], access: 'user', service: 'index', body: ChatPlaylistBody, response: ChatPlaylistResponse }),
  chatPlaylistStream: defineRoute({ method: 'post', path: '/chat/api/chatPlaylistStream', summary: 'The same as server-sent events: `status` and `text` events while it works, then one `result` (or `error`) event', tags: ['chat'], access: 'user', service: 'index', body: ChatPlaylistBody }),
  chatCreatePlaylist: defineRoute({ method: 'post', path: '/chat/api/create_playlist', summary: 'Save a chat result as a playlist on the selected server (name suffixed _instant)', tags: ['chat'], access: 'user', service: 'playlist', body: CreatePlaylistBody, response: CreatePlaylistResponse, status: 201 }),
  aiTest: defineRoute({ method: 'post', path: '/api/config/ai/test', summary: 'Test the configured AI provider: reachability and latency of the model', tags: ['config'], access: 'admin', service: 'registry', firstRun: true, response: AiTestResponse }),
};
