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

/**
 * One frame of POST /chat/api/chatPlaylistStream (server-sent events, `text/event-stream`): a `data:` line with
 * this JSON, then a blank line (no `event:` name; reference clients split frames on the blank line, join the
 * `data:` lines and switch on `type`).
 * - `log`: progress while it works; `kind` says whether `message` is a status line or a chunk of the model's
 *   text (`status` | `text`).
 * - `done`: the last frame; `response` is the same object as POST /chat/api/chatPlaylist's `response`.
 * - `error`: the last frame; `error` and `message` hold the human-readable reason, `code` and `request_id` the
 *   machine code and the request id.
 */
export const ChatStreamFrame = z.discriminatedUnion('type', [
  z.object({ type: z.literal('log'), kind: z.enum(['status', 'text']), message: z.string() }),
  z.object({ type: z.literal('done'), response: ChatPlaylistResponse.shape.response }),
  z.object({ type: z.literal('error'), error: z.string(), message: z.string(), code: z.string(), request_id: z.string().optional() }),
]);
export type ChatStreamFrame = z.infer<typeof ChatStreamFrame>;

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
  chatPlaylistStream: defineRoute({ method: 'post', path: '/chat/api/chatPlaylistStream', summary: 'The same as server-sent events: `data:` frames of JSON with `type` `log` while it works, then one `done` frame (`response` as chatPlaylist\'s) or one `error` frame (`error` message, `code`, `request_id`)', tags: ['chat'], access: 'user', service: 'index', body: ChatPlaylistBody }),
  chatCreatePlaylist: defineRoute({ method: 'post', path: '/chat/api/create_playlist', summary: 'Save a chat result as a playlist on the selected server (name suffixed _instant)', tags: ['chat'], access: 'user', service: 'playlist', body: CreatePlaylistBody, response: CreatePlaylistResponse, status: 201 }),
  aiTest: defineRoute({ method: 'post', path: '/api/config/ai/test', summary: 'Test the configured AI provider: reachability and latency of the model', tags: ['config'], access: 'admin', service: 'registry', firstRun: true, response: AiTestResponse }),
};
