import { ArtistLinkCounter } from '../core/generation';
import { artistKey } from '../core/text';
import { LinkRecorder } from './snapshot-delta';

/** A song as the link recorder reads it: display artist and mappings (provider artist ids per server). */
const song = (itemId: string, artist: string, maps: Array<[string, string | null]>) => ({ itemId, artist, mappings: maps.map(([serverId, artistId], i) => ({ serverId, providerId: `${itemId}-${i}`, artistId })) });

describe('LinkRecorder (the delta snapshot keeps link counts, not majority links)', () => {
  it('When unchanged rows are copied from a base and changed ones recorded, then the counts give the links a full count gives', () => {
    const base = [song('a', 'Alpha', [['s1', 'x'], ['s2', 'y']]), song('b', 'Alpha', [['s1', 'x']]), song('c', 'Alpha', [['s1', 'z']]), song('d', 'Beta', [['s1', null]])];
    const skipped = song('e', 'Alpha', [['s1', 'z']]);
    const rec = new LinkRecorder();
    base.forEach((t) => rec.row(t));
    rec.skip(skipped);
    expect(rec.rows).toBe(4);

    // Rebuild: b changed to provider artist z (now z has 3 votes against x's 1), d removed, a kept, e still left out.
    const next = new LinkRecorder();
    next.copyRow(rec, 0);
    next.row(song('b', 'Alpha', [['s1', 'z']]));
    next.copyRow(rec, 2);
    for (const [id, refs] of rec.skipped) next.copySkipped(rec, id, refs);
    const delta = new ArtistLinkCounter();
    next.countInto(delta);

    const full = new ArtistLinkCounter();
    for (const t of [base[0]!, song('b', 'Alpha', [['s1', 'z']]), base[2]!, skipped]) for (const m of t.mappings) if (m.artistId) full.add(m.serverId, artistKey(t.artist), m.artistId);
    const entries = (c: ArtistLinkCounter) => [...c.finish().entries()].map((e) => `${e.serverId}|${e.providerId}`).sort();
    expect(entries(delta)).toEqual(entries(full));
    expect(entries(delta)).toEqual(['s1|z', 's2|y']);
  });
});
