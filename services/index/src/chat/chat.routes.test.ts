import express from 'express';
import request from 'supertest';
import { chatRoutes } from '@polyphony/contracts';
import { createLogger } from '@polyphony/platform';
import { collectText, sseDataFrames } from '@polyphony/testkit';
import type { InstantPlaylistService } from './instant-playlist.service';
import type { IndexState } from '../core/generation';
import type { ScopeDeps } from '../core/scope';
import { chatRoutesRouter } from './chat.routes';

/** The stream route alone on an express app (no gateway): frames as the reference's clients read them. */
function appWith(run: InstantPlaylistService['run']) {
  const service = { run } as unknown as InstantPlaylistService;
  const state = { current: () => ({}) } as unknown as IndexState;
  const routes = chatRoutesRouter(service, state, {} as ScopeDeps, createLogger({ service: 'test', level: 'error' }));
  const app = express();
  app.use(express.json());
  app.use((req, _res, next) => {
    (req as unknown as { requestId: string }).requestId = 'req-1';
    next();
  });
  const entry = routes.entries.find((e) => e.def === chatRoutes.chatPlaylistStream)!;
  app.post(chatRoutes.chatPlaylistStream.path, ...entry.handlers);
  return app;
}

async function frames(app: express.Express): Promise<Array<Record<string, unknown>>> {
  const res = await request(app)
    .post(chatRoutes.chatPlaylistStream.path)
    .send({ userInput: 'calm music' })
    .buffer(true)
    .parse(collectText)
    .expect(200);
  expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
  expect(res.body as string).not.toMatch(/^event:/m);
  return sseDataFrames(res.body as string);
}

describe('POST /chat/api/chatPlaylistStream frames', () => {
  it('When the playlist is made, then log frames come first and the done frame carries the service response', async () => {
    const response = { ai_provider_used: 'NONE', ai_model_used: null, query_results: [{ item_id: '7', title: 'T', author: 'A', album: null }], message: 'ok', tool_calls: [] };
    const got = await frames(
      appWith(async (_scope, _input, _n, onEvent) => {
        onEvent?.({ type: 'status', message: 'Interpreting' });
        onEvent?.({ type: 'text', text: 'Calm ' });
        return { response };
      }),
    );
    expect(got).toEqual([
      { type: 'log', kind: 'status', message: 'Interpreting' },
      { type: 'log', kind: 'text', message: 'Calm ' },
      { type: 'done', response },
    ]);
  });

  it('When the service fails, then one error frame with a readable error, the code and the request id ends the stream', async () => {
    const got = await frames(
      appWith(async (_scope, _input, _n, onEvent) => {
        onEvent?.({ type: 'status', message: 'Asking the model' });
        throw new Error('The model is unreachable');
      }),
    );
    expect(got).toEqual([
      { type: 'log', kind: 'status', message: 'Asking the model' },
      { type: 'error', error: 'The model is unreachable', message: 'The model is unreachable', code: 'chat_failed', request_id: 'req-1' },
    ]);
  });
});
