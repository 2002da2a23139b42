/**
 * Embedder switch on a stored catalogue (issue 13, "Embedder versions"; store/embedding-switch.repository.ts): songs
 * stored with one version, then re-analysed with a learned version through the normal paths (resolve of new files
 * with the old version as an alternate, PUT .../learned with the new vector). Ids, mappings and the served version
 * stay as they were until every song has a new vector; then the catalogue serves the new version (signatures and
 * bands recomputed) and the identity gate compares new-version vectors only.
 */
import { MSD_TAGS, moodVectorOf } from '@polyphony/contracts';
import { copyOf, resolveRequest, songEmbedding, startCatalogue, type StartedCatalogue } from './helpers';

const OLD = 'test-v1';
const NEW = 'tfjs:test-learned';

/** A "learned" vector of song `seed`: unrelated to its old one (another space), stable per song. */
function learnedOf(seed: number): number[] {
  return songEmbedding(seed + 100_000);
}

const msd = MSD_TAGS.map((_, i) => (i === 23 ? 0.9 : i / 1000));
const learned = { tagsModel: 'musicnn-msd@412a832c+mtt@1a66a2e5', tags: { msd }, moodVector: moodVectorOf(msd), otherFeatures: 'danceable:0.100,aggressive:0.020,happy:0.300,party:0.050,relaxed:0.700,sad:0.200' };

describe('embedder switch (PostgreSQL, HTTP API)', () => {
  let c: StartedCatalogue;
  const resolve = async (body: unknown, status = 200) => (await c.post('/internal/identity/resolve', body).expect(status)).body;
  const status = async () => (await c.get('/internal/embedding/switch').expect(200)).body;
  const snapshotVersions = async () => {
    const page = (await c.get('/internal/snapshot/tracks?limit=5000').expect(200)).body as { tracks: Array<{ itemId: string; embedderVersion: string; embedding: string }> };
    return page.tracks;
  };
  const mappings = () => c.sql<{ server_id: string; provider_id: string; item_id: string }>(`SELECT server_id, provider_id, item_id FROM catalogue.track_server_map ORDER BY server_id, provider_id`);

  beforeAll(async () => {
    c = await startCatalogue();
  });
  afterAll(async () => {
    await c?.stop();
    await c?.db.drop();
  });

  it('When a catalogue of one version is re-analysed with another, then ids and mappings stay, the old version is served until every song is covered, and then the new one', async () => {
    // A stored catalogue: 6 songs on server A (old version), two of them also on server B.
    const ids: string[] = [];
    for (let s = 1; s <= 6; s++) ids.push((await resolve(resolveRequest('srv-a', `a${s}`, songEmbedding(s)))).itemId);
    for (const s of [1, 2]) expect((await resolve(resolveRequest('srv-b', `b${s}`, copyOf(songEmbedding(s), 50 + s)))).itemId).toBe(ids[s - 1]);
    expect(await status()).toMatchObject({ servedVersion: OLD, targetVersion: OLD, covered: 6, total: 6, switching: false });
    const mappingsBefore = await mappings();

    // The model is installed: a new file arrives with the new version and the old one as an alternate. The
    // decision is taken on the old version (served); the new vector is kept.
    const newSong = await resolve(resolveRequest('srv-a', 'a7', learnedOf(7), { embedderVersion: NEW, alternateEmbeddings: [{ embedderVersion: OLD, embedding: songEmbedding(7) }] }));
    expect(newSong.outcome).toBe('new');
    // A copy of a stored song from a third server: merged by the old-version gate, and the song gains its new vector.
    const copy = await resolve(resolveRequest('srv-c', 'c3', learnedOf(3), { embedderVersion: NEW, alternateEmbeddings: [{ embedderVersion: OLD, embedding: copyOf(songEmbedding(3), 53) }] }));
    expect(copy).toEqual({ itemId: ids[2], outcome: 'existing' });
    expect(await status()).toMatchObject({ servedVersion: OLD, targetVersion: NEW, covered: 2, total: 7, switching: true });
    const detail = (await c.get(`/internal/tracks/${ids[2]}?embedding=0`).expect(200)).body;
    expect(detail.embedderVersion).toBe(OLD);
    expect(detail.embedderVersions).toEqual([OLD, NEW].sort());

    // Re-analysis of the other songs (the run's retag path: PUT learned with the new vector), all but the last.
    for (const s of [1, 2, 4, 5]) await c.put(`/internal/tracks/${ids[s - 1]}/learned`, { ...learned, embedding: { embedderVersion: NEW, embedding: learnedOf(s) } }).expect(204);
    expect(await status()).toMatchObject({ servedVersion: OLD, covered: 6, total: 7, switching: true });
    // Not covered yet: the index is fed the old version only.
    expect(new Set((await snapshotVersions()).map((t) => t.embedderVersion))).toEqual(new Set([OLD]));

    // The last song: the catalogue switches (at the latest when its status is read).
    await c.put(`/internal/tracks/${ids[5]}/learned`, { ...learned, embedding: { embedderVersion: NEW, embedding: learnedOf(6) } }).expect(204);
    const after = await status();
    expect(after).toMatchObject({ servedVersion: NEW, targetVersion: NEW, covered: 7, total: 7, switching: false });
    expect(after.switchedAt).not.toBeNull();
    const snap = await snapshotVersions();
    expect(snap.map((t) => t.itemId).sort()).toEqual([...ids, newSong.itemId].sort());
    expect(new Set(snap.map((t) => t.embedderVersion))).toEqual(new Set([NEW]));
    // The served vectors are the learned ones, with signatures and bands recomputed from them.
    const served = snap.find((t) => t.itemId === ids[0])!;
    const vec = Buffer.from(served.embedding, 'base64');
    expect(vec.readFloatLE(0)).toBeCloseTo(learnedOf(1)[0]!, 5);
    const bandless = await c.sql(`SELECT s.item_id FROM catalogue.score s WHERE NOT EXISTS (SELECT 1 FROM catalogue.signature_band b WHERE b.song_no = s.song_no)`);
    expect(bandless).toEqual([]);
    // No song, id or mapping lost or changed; the old vectors are kept as alternates.
    expect((await mappings()).filter((m) => m.server_id !== 'srv-c' && m.provider_id !== 'a7')).toEqual(mappingsBefore);
    expect((await c.sql<{ n: number }>(`SELECT count(*)::int AS n FROM catalogue.embedding_alt WHERE embedder_version = $1`, [OLD]))[0]!.n).toBe(7);
    expect((await c.sql<{ v: string }>(`SELECT DISTINCT embedder_version AS v FROM catalogue.score`)).map((r) => r.v)).toEqual([NEW]);

    // Identity after the switch compares new-version vectors: a copy merges, a different song gets a new id.
    const copy2 = await resolve(resolveRequest('srv-d', 'd1', copyOf(learnedOf(1), 91), { embedderVersion: NEW, alternateEmbeddings: [{ embedderVersion: OLD, embedding: copyOf(songEmbedding(1), 92) }] }));
    expect(copy2).toEqual({ itemId: ids[0], outcome: 'existing' });
    // Same old-version vector (as if the old embedder confused them) but different learned audio: not merged.
    const other = await resolve(resolveRequest('srv-d', 'd2', learnedOf(8), { embedderVersion: NEW, alternateEmbeddings: [{ embedderVersion: OLD, embedding: songEmbedding(2) }] }));
    expect(other.outcome).toBe('new');
    expect(ids).not.toContain(other.itemId);
  });

  it('When a worker without the model (old version only) resolves after the switch, then the catalogue switches back at once: every song kept its old vector', async () => {
    const before = await status();
    expect(before.servedVersion).toBe(NEW);
    const r = await resolve(resolveRequest('srv-e', 'e1', copyOf(songEmbedding(4), 94)));
    expect(r.outcome).toBe('existing');
    const back = await status();
    expect(back).toMatchObject({ servedVersion: OLD, targetVersion: OLD, switching: false });
    expect(back.covered).toBe(back.total);
    expect(new Set((await snapshotVersions()).map((t) => t.embedderVersion))).toEqual(new Set([OLD]));
  });

  it('When a request carries no vector of the served version and the catalogue cannot switch to its version, then it is a 409 saying why', async () => {
    const body = (await c.post('/internal/identity/resolve', resolveRequest('srv-f', 'f1', songEmbedding(77), { embedderVersion: 'tfjs:other' })).expect(409)).body;
    expect(body.code).toBe('embedder_version_mismatch');
    expect(body.error).toContain(OLD);
    // A request of the served version is still decided normally afterwards.
    expect((await resolve(resolveRequest('srv-f', 'f2', songEmbedding(78)))).outcome).toBe('new');
  });

  it('When a song of a learned analysis that failed is sent with the old version only, then its active version stays the target', async () => {
    await resolve(resolveRequest('srv-g', 'g1', songEmbedding(79), { activeEmbedderVersion: NEW }));
    expect(await status()).toMatchObject({ servedVersion: OLD, targetVersion: NEW, switching: true });
  });
});
