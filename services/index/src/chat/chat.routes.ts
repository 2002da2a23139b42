import type { Request } from 'express';
import { chatRoutes as routes, type ChatStreamFrame } from '@polyphony/contracts';
import { type Logger, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { InstantPlaylistService } from './instant-playlist.service';
import type { IndexState } from '../core/generation';
import { requestScope, type ScopeDeps } from '../core/scope';

/**
 * Instant playlists (reference `/chat/api/*`): `chatPlaylist` answers `{response:{...}}` (200; 400 for
 * an empty or too long `userInput`); `chatPlaylistStream` sends the same as server-sent events: `data:`
 * frames of JSON (contracts ChatStreamFrame) with `type` `log` while it works, then one `done` frame carrying
 * the same `response` as chatPlaylist, or one `error` frame that ends the stream. Songs are the selected
 * server's, in its ids.
 */
export function chatRoutesRouter(service: InstantPlaylistService, state: IndexState, scopeDeps: ScopeDeps, logger: Logger): RouteHandlers {
  const r = routeHandlers();
  const scopeOf = (req: Request) => requestScope(state.current(), req, scopeDeps);

  r.json(routes.chatPlaylist, async ({ body }, req) => service.run((await scopeOf(req)), body.userInput, body.n));

  // Server-sent events: the handler writes the answer itself (the body is the route's, parsed once).
  r.json(routes.chatPlaylistStream, async ({ body }, req, res) => {
    res.status(200).setHeader('content-type', 'text/event-stream; charset=utf-8');
    res.setHeader('cache-control', 'no-store');
    res.setHeader('x-accel-buffering', 'no');
    res.flushHeaders();
    const send = (frame: ChatStreamFrame) => {
      if (!res.writableEnded) res.write(`data: ${JSON.stringify(frame)}\n\n`);
    };
    try {
      const result = await service.run((await scopeOf(req)), body.userInput, body.n, (e) => send({ type: 'log', kind: e.type, message: e.type === 'text' ? e.text : e.message }));
      send({ type: 'done', response: result.response });
    } catch (err) {
      logger.warn('instant playlist stream failed', { error: (err as Error).message });
      const message = (err as Error).message;
      send({ type: 'error', error: message, message, code: 'chat_failed', request_id: req.requestId });
    }
    res.end();
  });
  return r;
}
