import { Readable } from 'node:stream';
import { parseCopyBlocks, unescapeCopy } from './reference-source';
import { Skips, decodeReferenceChromaprint, decodeReferenceVector, planImport } from '../domain/reference-import/plan';
import { referenceChromaprintBytes, referenceVectorBytes } from '@polyphony/testkit';

const hex = (b: Buffer) => `\\\\x${b.toString('hex')}`; // as pg_dump writes bytea in COPY text

describe('reference dump reader and plan', () => {
  it('When COPY fields carry escapes, NULLs and bytea, then they read as PostgreSQL text values', () => {
    expect(unescapeCopy('\\N')).toBeNull();
    expect(unescapeCopy('a\\tb\\nc\\\\d')).toBe('a\tb\nc\\d');
    expect(unescapeCopy('\\\\x0a0b')).toBe('\\x0a0b');
    expect(unescapeCopy('caf\\303\\251')).toBe('caf\u00c3\u00a9');
  });

  it('When a plain dump of the single-server layout is planned, then the server comes from app_config and provider-keyed songs map to it', async () => {
    const v = Float32Array.from({ length: 200 }, (_, i) => Math.sin(i));
    const dump = [
      'SET statement_timeout = 0;',
      'COPY public.app_config (key, value, updated_at) FROM stdin;',
      'MEDIASERVER_TYPE\tjellyfin\t2024-01-01', 'JELLYFIN_URL\thttp://jf:8096\t2024-01-01', 'JELLYFIN_USER_ID\tu1\t2024-01-01', 'JELLYFIN_TOKEN\tt0k\t2024-01-01',
      '\\.',
      'COPY public.score (item_id, title, author, album, tempo, file_path, duration) FROM stdin;',
      'abc123\tSong\tArtist\t\\N\t120.5\t/music/a.flac\t200.1',
      'short\tBad\tArtist\t\\N\t\\N\t\\N\t\\N',
      '\\.',
      'COPY public.embedding (item_id, embedding) FROM stdin;',
      `abc123\t${hex(referenceVectorBytes(v))}`,
      `short\t${hex(Buffer.alloc(12))}`,
      '\\.',
      'COPY public.chromaprint (provider_track_id, fingerprint) FROM stdin;',
      `abc123\t${hex(referenceChromaprintBytes([1, 2, 0xffffffff]))}`,
      '\\.',
    ].join('\n');
    const data = await parseCopyBlocks(Readable.from([dump]));
    expect([...data.keys()]).toEqual(['app_config', 'score', 'embedding', 'chromaprint']);
    expect(decodeReferenceVector(data.get('embedding')![0]!.embedding)).toEqual(v);
    expect(decodeReferenceChromaprint(data.get('chromaprint')![0]!.fingerprint)).toEqual([1, 2, -1]);
    const skips = new Skips();
    const plan = await planImport({ tables: async () => new Set(data.keys()), rows: async (t) => data.get(t) ?? [], close: async () => undefined }, skips);
    expect(plan.layout).toBe('single-server');
    expect(plan.servers).toEqual([{ refId: 'legacy-default', name: 'Jellyfin', type: 'jellyfin', creds: { url: 'http://jf:8096', user_id: 'u1', token: 't0k' }, libraries: [], isDefault: true }]);
    expect(plan.songs).toHaveLength(1);
    expect(plan.songs[0]).toMatchObject({ refItemId: 'abc123', tempo: 120.5, durationSeconds: 200.1, files: [{ refServerId: 'legacy-default', providerId: 'abc123', filePath: '/music/a.flac' }] });
    expect(plan.chromaprints).toEqual([{ refServerId: 'legacy-default', providerId: 'abc123', words: [1, 2, -1] }]);
    expect(skips.list()).toEqual([{ table: 'score', reason: 'embedding is not 200 finite float32 values', count: 1, examples: ['short'] }]);
  });
});
