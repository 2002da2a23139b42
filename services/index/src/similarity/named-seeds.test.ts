import { ValidationError } from '@polyphony/platform';
import { emptyGeneration } from '../core/generation';
import { pathEndOf } from './named-seeds';

describe('find_path ends', () => {
  const gen = emptyGeneration();
  const unit = new Float32Array([1, 0]);

  it('When one end names exactly one seed, then it becomes a song end or a point end with a label', async () => {
    const seeds = { mood: async () => unit, anchor: async () => ({ id: 7, vector: unit, name: 'Night drive', exclusions: [] }) };
    expect(await pathEndOf('start', { songId: 's1' }, gen, seeds)).toEqual({ songId: 's1' });
    expect(await pathEndOf('start', { mood: 'happy' }, gen, seeds)).toEqual({ vector: unit, label: 'mood "happy"' });
    expect(await pathEndOf('end', { anchor: '7' }, gen, seeds)).toEqual({ vector: unit, label: 'anchor "Night drive"' });
  });

  it('When an end names none or several seeds, or a seed kind this deployment lacks, then it is a 400 with a message', async () => {
    await expect(pathEndOf('start', {}, gen, {})).rejects.toThrow(/exactly one of start_song_id, start_mood or start_anchor/);
    await expect(pathEndOf('end', { songId: 'a', mood: 'sad' }, gen, {})).rejects.toThrow(ValidationError);
    await expect(pathEndOf('start', { mood: 'sad' }, gen, {})).rejects.toThrow(/Mood seeds are not available/);
    await expect(pathEndOf('start', { anchor: '1' }, gen, {})).rejects.toThrow(/Anchor seeds are not available/);
  });
});
