import {
  chunk,
  fileUrlToPath,
  isAbsolutePath,
  isoFromEpochSeconds,
  isoFromText,
  lyricsToPlain,
  normalisePrefix,
  pagesByOffset,
  pathsLookAbsolute,
  runConnectionTest,
  underAnyPrefix,
} from './common';
import { BadCredentialsError } from './errors';

describe('common helpers', () => {
  it('When decoding file:// URLs, then percent-encoding is undone once and drive letters kept', () => {
    expect(fileUrlToPath('file:///music/OST/Ancestral%20Aid.mp3')).toBe('/music/OST/Ancestral Aid.mp3');
    expect(fileUrlToPath('file:///music/100%2525.mp3')).toBe('/music/100%25.mp3');
    expect(fileUrlToPath('file:///C:/Music/x%C3%A9.flac')).toBe('C:/Music/xé.flac');
    expect(fileUrlToPath('file:///bad%ZZ.mp3')).toBe('/bad%ZZ.mp3');
    expect(fileUrlToPath('spotify://track:1')).toBeUndefined();
  });

  it('When matching prefixes, then only separator boundaries count', () => {
    const pre = [normalisePrefix('file:///music/rock/'), normalisePrefix('/srv/jazz')];
    expect(pre).toEqual(['/music/rock', '/srv/jazz']);
    expect(underAnyPrefix('/music/rock/a.mp3', pre)).toBe(true);
    expect(underAnyPrefix('/music/rockabilly/a.mp3', pre)).toBe(false);
    expect(underAnyPrefix('/srv/jazz', pre)).toBe(true);
    expect(underAnyPrefix(undefined, pre)).toBe(false);
    expect(underAnyPrefix('/anything', [normalisePrefix('/')])).toBe(true);
  });

  it('When judging paths, then 80 % absolute is the threshold and relative Navidrome paths fail', () => {
    expect(isAbsolutePath('\\\\nas\\music')).toBe(true);
    expect(isAbsolutePath('D:\\Music\\a.flac')).toBe(true);
    expect(isAbsolutePath('Artist/Album/01.flac')).toBe(false);
    expect(pathsLookAbsolute(['/a', '/b', '/c', '/d', 'rel'])).toBe(true);
    expect(pathsLookAbsolute(['/a', '/b', '/c', 'r1', 'r2'])).toBe(false);
    expect(pathsLookAbsolute([undefined])).toBe(false);
  });

  it('When converting times, then 7-digit fractions and epoch seconds become millisecond ISO UTC', () => {
    expect(isoFromText('2023-03-26T22:27:46.1234567Z')).toBe('2023-03-26T22:27:46.123Z');
    expect(isoFromText('garbage')).toBeUndefined();
    expect(isoFromEpochSeconds(1679869666)).toBe('2023-03-26T22:27:46.000Z');
    expect(isoFromEpochSeconds(0)).toBeUndefined();
  });

  it('When lyrics are LRC, then tags and header lines are removed', () => {
    expect(lyricsToPlain('[ti:Song]\r\n[00:01.00]<00:01.00>One\n[00:02.50][00:10.00]Two\n')).toBe('One\nTwo');
    expect(lyricsToPlain('[00:01.00]\n')).toBeUndefined();
  });

  it('When chunking, then slices keep order and the last may be short', () => {
    expect(chunk([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(chunk([], 3)).toEqual([]);
  });

  it('When paging by offset, then it stops at the reported total, else at a short or empty page, asking from the items seen', async () => {
    const collect = async (rows: number, total: (n: number) => number | undefined) => {
      const asked: Array<[number, number]> = [];
      const pages: number[][] = [];
      const serve = async (start: number, limit: number) => {
        asked.push([start, limit]);
        return { items: Array.from({ length: Math.max(0, Math.min(limit, rows - start)) }, (_, i) => start + i), total: total(rows) };
      };
      for await (const page of pagesByOffset(3, serve)) pages.push(page);
      return { asked, pages };
    };
    // Total reported: 7 rows in pages of 3, no request after the total is reached.
    expect(await collect(7, (n) => n)).toEqual({ asked: [[0, 3], [3, 3], [6, 3]], pages: [[0, 1, 2], [3, 4, 5], [6]] });
    // No total: a short page ends it; a full last page needs one more (empty) request.
    expect((await collect(7, () => undefined)).asked).toEqual([[0, 3], [3, 3], [6, 3]]);
    expect(await collect(6, () => undefined)).toEqual({ asked: [[0, 3], [3, 3], [6, 3]], pages: [[0, 1, 2], [3, 4, 5]] });
    // A total larger than what the server serves: the empty page stops it.
    expect((await collect(4, () => 100)).pages).toEqual([[0, 1, 2], [3]]);
  });

  it('When a step throws a typed error, then runConnectionTest folds it; a filter id the server lacks fails the test', async () => {
    const failing = await runConnectionTest({
      probe: async () => ({ serverName: 'x' }),
      libraries: async () => {
        throw new BadCredentialsError('no');
      },
      sample: async () => [],
    });
    expect(failing).toEqual({ ok: false, serverName: 'x', sampleTrackCount: 0, libraries: [], pathsLookAbsolute: false, errorKind: 'bad_credentials', message: 'no' });
    const unknown = await runConnectionTest({
      probe: async () => ({}),
      libraries: async () => [{ id: '1', name: 'M' }],
      sample: async () => [{ id: 't', title: 't', artist: 'a', path: '/x' }],
      filterIds: ['1', '2'],
    });
    expect(unknown.ok).toBe(false);
    expect(unknown.message).toContain('2');
    await expect(runConnectionTest({
      probe: async () => {
        throw new Error('bug');
      },
      libraries: async () => [],
      sample: async () => [],
    })).rejects.toThrow('bug');
  });
});
