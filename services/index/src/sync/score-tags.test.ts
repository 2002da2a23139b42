/** The `tags` of GET /api/track from the stored tag bytes (sync.service.ts tagsRecord). */
import { MSD_TAGS, MTT_TAGS } from '@polyphony/contracts';
import { tagsRecord } from './sync.service';

describe('tagsRecord', () => {
  const bytes = (msd: (i: number) => number, mtt: (i: number) => number) => Buffer.from([...MSD_TAGS.map((_, i) => msd(i)), ...MTT_TAGS.map((_, i) => mtt(i))]);

  it('When a song has MSD and MTT tags, then every label maps to its probability (3 decimals), a shared label to the higher one', () => {
    const rockMsd = MSD_TAGS.indexOf('rock');
    const rockMtt = MTT_TAGS.indexOf('rock');
    const piano = MTT_TAGS.indexOf('piano');
    const r = tagsRecord(bytes((i) => (i === rockMsd ? 51 : 3), (i) => (i === piano ? 105 : i === rockMtt ? 200 : 1)))!;
    expect(Object.keys(r)).toHaveLength(new Set([...MSD_TAGS, ...MTT_TAGS]).size);
    expect(r['piano']).toBe(0.412); // 105 / 255 = 0.41176
    expect(r['rock']).toBe(0.784); // MTT 200 / 255 beats MSD 51 / 255
    expect(r['Mellow']).toBe(0.012); // 3 / 255, MSD label as the model names it
    expect(r['harp']).toBe(0.004); // 1 / 255
  });

  it('When the MTT bytes are all zero (analysed without the MTT model), then only the MSD labels are given', () => {
    const r = tagsRecord(bytes((i) => i, () => 0))!;
    expect(Object.keys(r).sort()).toEqual([...MSD_TAGS].sort());
    expect(r['pop']).toBe(0.004);
    expect(r['rock']).toBe(0);
  });

  it('When the song has no tags (or bytes of another length), then tags is null', () => {
    expect(tagsRecord(null)).toBeNull();
    expect(tagsRecord(Buffer.alloc(50))).toBeNull();
  });
});
