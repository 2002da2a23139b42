/**
 * The semantic table of text search is built while a generation is prepared (part of a replica's load and of a
 * build's activation), so a replica that turns ready does not start building it under query load.
 */
import { createLogger } from '@polyphony/platform';
import type { SemanticRepository } from './semantic.repository';
import { IndexState, emptyGeneration } from '../core/generation';
import { SemanticService, type LyricsPort } from './semantic.service';

describe('SemanticService and generation prepare', () => {
  it('When a generation is prepared, then its semantic table is built before the swap and not again after it', async () => {
    const state = new IndexState(emptyGeneration());
    let reads = 0;
    const repo = {
      semanticPages: async function* () {
        reads++;
        yield [];
      },
    } as unknown as SemanticRepository;
    const lyrics = {} as LyricsPort;
    const service = new SemanticService(state, repo, lyrics, createLogger({ service: 'test', level: 'error' }));
    const next = { ...emptyGeneration(), generation: 3 };
    await state.prepare(next);
    expect(reads).toBe(1);
    state.swap(next);
    const table = await service.table(state.current());
    expect(reads).toBe(1);
    expect(table).toBe(await service.table(next));
  });

  it('When the rows cannot be read while preparing, then the swap still happens and the table is built on first use', async () => {
    const state = new IndexState(emptyGeneration());
    let reads = 0;
    const repo = {
      semanticPages: async function* () {
        reads++;
        if (reads === 1) throw new Error('connection terminated');
        yield [];
      },
    } as unknown as SemanticRepository;
    const service = new SemanticService(state, repo, {} as LyricsPort, createLogger({ service: 'test', level: 'error' }));
    const next = { ...emptyGeneration(), generation: 4 };
    await expect(state.prepare(next)).resolves.toBeUndefined();
    state.swap(next);
    await service.table(state.current());
    expect(reads).toBe(2);
  });
});
