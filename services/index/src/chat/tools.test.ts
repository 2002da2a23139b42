import { validateToolCall, type ChatToolDeps } from './tools';

/** validateToolCall reads only `deps.text` (whether text_search is offered); the services are not called. */
const deps = {} as ChatToolDeps;

describe('validateToolCall (arguments an LLM produced are untrusted)', () => {
  it('When the arguments are valid, then the call is accepted with the coerced values', () => {
    expect(validateToolCall('song_similarity', '{"title":"Heroes Rite","n":"7"}', deps)).toEqual({ ok: true, tool: 'song_similarity', args: { title: 'Heroes Rite', n: 7 } });
  });

  it('When a number argument is an object whose toString is a string, then it is refused, not thrown', () => {
    const r = validateToolCall('song_similarity', '{"title":"Heroes Rite","n":{"toString":"x","valueOf":"y"}}', deps);
    expect(r).toEqual({ ok: false, error: expect.stringMatching(/^invalid arguments for song_similarity: /) });
  });

  it('When the tool is unknown or text search is not offered, then it is refused by name', () => {
    expect(validateToolCall('rm_rf', '{}', deps)).toEqual({ ok: false, error: 'unknown tool "rm_rf"' });
    expect(validateToolCall('text_search', '{"query":"calm"}', deps)).toEqual({ ok: false, error: 'unknown tool "text_search"' });
  });
});
