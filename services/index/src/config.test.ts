import { DEFAULT_RESIDENT_MIB, loadIndexConfig, recordingPostingsFrom, vectorSettingsFrom } from './config';

describe('vector store settings', () => {
  it('keeps float copies up to 128 MiB in memory by default, takes INDEX_VECTOR_RESIDENT_MIB, refuses nonsense', () => {
    expect(vectorSettingsFrom({}).residentMiB).toBe(DEFAULT_RESIDENT_MIB);
    expect(DEFAULT_RESIDENT_MIB).toBe(128);
    // 100k x 200-d float32 (76.3 MiB) fits the default; 1M (763 MiB) does not, so the 1M memory bound is unchanged.
    expect((100_000 * 200 * 4) / 2 ** 20).toBeLessThan(DEFAULT_RESIDENT_MIB);
    expect((1_000_000 * 200 * 4) / 2 ** 20).toBeGreaterThan(DEFAULT_RESIDENT_MIB);
    expect(vectorSettingsFrom({ INDEX_VECTOR_RESIDENT_MIB: '0' }).residentMiB).toBe(0);
    expect(vectorSettingsFrom({ INDEX_VECTOR_RESIDENT_MIB: '512' }).residentMiB).toBe(512);
    for (const bad of ['-1', 'lots', '1e9']) expect(() => vectorSettingsFrom({ INDEX_VECTOR_RESIDENT_MIB: bad })).toThrow(/INDEX_VECTOR_RESIDENT_MIB/);
  });

  it('re-ranks large int8 generations from the codes by default (INDEX_RERANK_SOURCE), file on request, refuses nonsense', () => {
    expect(vectorSettingsFrom({}).rerank).toBe('codes');
    expect(vectorSettingsFrom({ INDEX_RERANK_SOURCE: 'file' }).rerank).toBe('file');
    expect(() => vectorSettingsFrom({ INDEX_RERANK_SOURCE: 'ssd' })).toThrow(/re-rank source/);
  });
});

describe('recording postings settings', () => {
  it('matches on the event loop by default, in a worker thread with RECORDING_MATCH_THREAD=1, refuses nonsense', () => {
    expect(recordingPostingsFrom({})).toEqual({ residentMiB: 64 });
    expect(recordingPostingsFrom({ RECORDING_MATCH_THREAD: '1', INDEX_VECTOR_DIR: '/d' })).toEqual({ residentMiB: 64, dir: '/d', matchThread: true });
    expect(recordingPostingsFrom({ RECORDING_MATCH_THREAD: 'false' }).matchThread).toBeUndefined();
    expect(() => recordingPostingsFrom({ RECORDING_MATCH_THREAD: 'yes' })).toThrow(/RECORDING_MATCH_THREAD/);
  });
});

describe('generation reuse settings', () => {
  const base = { DATABASE_URL: 'postgres://127.0.0.1/x' };
  it('reuses up to 5 % changed rows and 25 % placed since the lineage root by default; 0 turns reuse off; refuses nonsense', () => {
    expect(loadIndexConfig(base)).toMatchObject({ buildReuseMaxChanged: 0.05, buildReuseMaxDrift: 0.25 });
    expect(loadIndexConfig({ ...base, INDEX_BUILD_REUSE_MAX_CHANGED: '0', INDEX_BUILD_REUSE_MAX_DRIFT: '0.5' })).toMatchObject({ buildReuseMaxChanged: 0, buildReuseMaxDrift: 0.5 });
    expect(() => loadIndexConfig({ ...base, INDEX_BUILD_REUSE_MAX_DRIFT: '0' })).toThrow(/INDEX_BUILD_REUSE_MAX_DRIFT/);
    expect(() => loadIndexConfig({ ...base, INDEX_BUILD_REUSE_MAX_DRIFT: 'lots' })).toThrow(/INDEX_BUILD_REUSE_MAX_DRIFT/);
    expect(() => loadIndexConfig({ ...base, INDEX_BUILD_REUSE_MAX_CHANGED: '2' })).toThrow(/INDEX_BUILD_REUSE_MAX_CHANGED/);
  });
});
