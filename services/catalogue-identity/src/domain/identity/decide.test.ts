import { bandLayoutForTolerance } from './bands';
import { DEFAULT_IDENTITY_CONFIG, IdentityConfig } from './constants';
import { IdentityDecision, IdentityResolver, judgeCandidates, mintCanonicalId, resolveAndCommit } from './decide';
import { InMemoryIdentityStore } from './in-memory-identity-store';
import {
  computeSignature,
  formatCanonicalId,
  hammingDistance,
  nextCode,
  signatureToHex,
  unsignableCanonicalId,
} from './signature';
import { file, perturb, randomEmbedding, rng, sameSignatureDifferentSong, track } from './__tests__/factories';

const config = (over: Partial<IdentityConfig> = {}): IdentityConfig => ({ ...DEFAULT_IDENTITY_CONFIG, ...over });

function sigOf(e: ArrayLike<number>): Uint32Array {
  const s = computeSignature(e);
  if (!s.ok) throw new Error('unsignable');
  return s.code;
}

function setup(over: Partial<IdentityConfig> = {}): { store: InMemoryIdentityStore; resolver: IdentityResolver } {
  const c = config(over);
  const store = new InMemoryIdentityStore(bandLayoutForTolerance(c.signatureMaxHamming));
  return { store, resolver: new IdentityResolver(store, c) };
}

async function place(store: InMemoryIdentityStore, resolver: IdentityResolver, t: Parameters<IdentityResolver['resolve']>[0]): Promise<IdentityDecision> {
  const d = await resolver.resolve(t);
  expect(store.commit(d, t)).toBe('committed');
  return d;
}

describe(IdentityResolver.name, () => {
  it('When the catalogue is empty, then the track gets its signature id under the current scheme', async () => {
    const { store, resolver } = setup();
    const e = randomEmbedding(rng(1));
    const d = await place(store, resolver, track(e, 180, file('jf', 'a1', '/music/a/01.flac')));
    expect(d).toMatchObject({ kind: 'new', reason: 'no-candidate', collisions: 0 });
    expect(d.canonicalId).toBe(`fp_4${signatureToHex(sigOf(e))}`);
  });

  it('When the same recording arrives from another server, then it merges into the existing song', async () => {
    const r = rng(2);
    const { store, resolver } = setup();
    const e = randomEmbedding(r);
    const first = await place(store, resolver, track(e, 180, file('jf', 'a1', '/music/a/01.flac')));
    const copy = perturb(e, 0.02, r);
    expect(hammingDistance(sigOf(copy), sigOf(e))).toBeLessThanOrEqual(10);
    const d = await place(store, resolver, track(copy, 180.6, file('nd', 'x9', '/data/a/01.flac')));
    expect(d).toMatchObject({ kind: 'merge', via: 'gates', canonicalId: first.canonicalId });
    expect(store.get(first.canonicalId)?.files.map((f) => f.serverId)).toEqual(['jf', 'nd']);
    expect(store.size).toBe(1);
  });

  it('When the copy sits on the same server in another folder, then it merges (a duplicate file gets its own mapping)', async () => {
    const r = rng(3);
    const { store, resolver } = setup();
    const e = randomEmbedding(r);
    const first = await place(store, resolver, track(e, 200, file('jf', 'a1', '/music/album/01.flac')));
    const d = await place(store, resolver, track(perturb(e, 0.02, r), 200, file('jf', 'a2', '/music/best-of/07.flac')));
    expect(d).toMatchObject({ kind: 'merge', canonicalId: first.canonicalId });
  });

  it('When a duration is unknown, then the tracks are split and the second takes the next free id', async () => {
    const r = rng(4);
    const { store, resolver } = setup();
    const e = randomEmbedding(r);
    const first = await place(store, resolver, track(e, 200, file('jf', 'a1', '/m/a/01.flac')));
    const d = await place(store, resolver, track(Float64Array.from(e), null, file('nd', 'b1', '/n/a/01.flac')));
    expect(d.kind).toBe('new');
    if (d.kind !== 'new') return;
    expect(d.reason).toBe('all-rejected');
    expect(d.verdicts[0]?.gates).toMatchObject({ duration: 'fail', same: false });
    expect(d.collisions).toBe(1);
    expect(d.canonicalId).toBe(formatCanonicalId(4, nextCode(sigOf(e))));
    expect(d.canonicalId).not.toBe(first.canonicalId);
  });

  it('When two different files share a folder on one server, then they are never merged', async () => {
    const r = rng(5);
    const { store, resolver } = setup();
    const e = randomEmbedding(r);
    await place(store, resolver, track(e, 200, file('jf', 'a1', '/m/album/01 take 1.flac')));
    const d = await place(store, resolver, track(perturb(e, 0.01, r), 200, file('jf', 'a2', '/m/album/02 take 2.flac')));
    expect(d).toMatchObject({ kind: 'new', reason: 'all-rejected' });
    expect(d.verdicts[0]?.gates?.folder).toBe('fail');
    expect(store.size).toBe(2);
  });

  it('When a different recording has the very same signature, then it gets the next free id, and a third the one after', async () => {
    const r = rng(6);
    const { store, resolver } = setup();
    const e = randomEmbedding(r);
    const other = sameSignatureDifferentSong(e, r);
    const third = sameSignatureDifferentSong(e, r);
    expect(hammingDistance(sigOf(other), sigOf(e))).toBe(0);
    const a = await place(store, resolver, track(e, 200, file('jf', 'a', '/m/x/1.flac')));
    const b = await place(store, resolver, track(other, 200, file('jf', 'b', '/m/y/1.flac')));
    const c = await place(store, resolver, track(third, 200, file('jf', 'c', '/m/z/1.flac')));
    const sig = sigOf(e);
    expect([a.canonicalId, b.canonicalId, c.canonicalId]).toEqual([
      formatCanonicalId(4, sig),
      formatCanonicalId(4, nextCode(sig)),
      formatCanonicalId(4, nextCode(nextCode(sig))),
    ]);
    expect(b.verdicts[0]?.gates?.cosine).toBe('fail');
  });

  it('When the Chromaprints disagree, then the tracks split; when one is missing, the gate abstains and they merge', async () => {
    const r = rng(7);
    const { store, resolver } = setup();
    const e = randomEmbedding(r);
    const print = Int32Array.from({ length: 400 }, () => Math.floor(r() * 2 ** 32) | 0);
    const foreign = Int32Array.from({ length: 400 }, () => Math.floor(r() * 2 ** 32) | 0);
    const first = await place(store, resolver, track(e, 200, file('jf', 'a', '/m/x/1.flac'), print));
    const split = await place(store, resolver, track(perturb(e, 0.01, r), 200, file('nd', 'b', '/n/x/1.flac'), foreign));
    expect(split.kind).toBe('new');
    expect(split.verdicts[0]?.gates?.chromaprint).toBe('fail');
    const merged = await place(store, resolver, track(perturb(e, 0.01, r), 200, file('pl', 'c', '/p/x/1.flac'), null));
    expect(merged).toMatchObject({ kind: 'merge', canonicalId: first.canonicalId });
  });

  it('When scheme 2 is configured, then an unknown duration does not split (duration gate off)', async () => {
    const r = rng(8);
    const { store, resolver } = setup({ schemeVersion: 2 });
    const e = randomEmbedding(r);
    const first = await place(store, resolver, track(e, 200, file('jf', 'a', '/m/x/1.flac')));
    expect(first.canonicalId.startsWith('fp_2')).toBe(true);
    const d = await place(store, resolver, track(perturb(e, 0.01, r), null, file('nd', 'b', '/n/x/1.flac')));
    expect(d).toMatchObject({ kind: 'merge', canonicalId: first.canonicalId });
  });

  it('When the embedding is unsignable, then the track is kept apart under fp_0 of its file, and the same file re-binds', async () => {
    const { store, resolver } = setup();
    const bad = new Float64Array(200).fill(0.5);
    const d1 = await place(store, resolver, track(bad, 200, file('jf', 'z1', '/m/x/1.flac')));
    expect(d1).toMatchObject({ kind: 'new', reason: 'unsignable', unsignableReason: 'constant', canonicalId: unsignableCanonicalId('jf', 'z1') });
    const d2 = await place(store, resolver, track(Float64Array.from(bad), 200, file('jf', 'z2', '/m/y/1.flac')));
    expect(d2.canonicalId).toBe(unsignableCanonicalId('jf', 'z2'));
    const again = await resolver.resolve(track(bad, 200, file('jf', 'z1', '/m/x/1.flac')));
    expect(again).toMatchObject({ kind: 'merge', via: 'same-unsignable-file', canonicalId: d1.canonicalId });
  });

  it('When the config is invalid, then the resolver refuses to start', () => {
    const store = new InMemoryIdentityStore(bandLayoutForTolerance(10));
    expect(() => new IdentityResolver(store, config({ schemeVersion: 5 }))).toThrow(/schemeVersion/);
    expect(() => new IdentityResolver(store, config({ duplicateDistanceThresholdCosine: -1 }))).toThrow(/duplicateDistance/);
  });

  it('When the source indexes another band layout, then the lookup is refused', async () => {
    const store = new InMemoryIdentityStore(bandLayoutForTolerance(12));
    const resolver = new IdentityResolver(store, config());
    await expect(resolver.resolve(track(randomEmbedding(rng(9)), 200, file('jf', 'a', null)))).rejects.toThrow(/layout/);
  });
});

describe(judgeCandidates.name, () => {
  it('When a candidate is 12 bits away, then it is dropped before the gates even if its audio is almost equal', () => {
    const r = rng(10);
    // a: twelve dimensions just above a zero mean; b: the same twelve just below, mean kept at zero.
    const a = randomEmbedding(r);
    for (let d = 0; d < 12; d++) a[d] = 1e-3;
    a[100] = (a[100] as number) - a.reduce((s, x) => s + x, 0);
    const b = Float64Array.from(a);
    for (let d = 0; d < 12; d++) b[d] = -1e-3;
    b[100] = (b[100] as number) + 24e-3;
    expect(hammingDistance(sigOf(a), sigOf(b))).toBe(12);
    const candidate = { canonicalId: 'fp_4' + '0'.repeat(50), embedding: b, durationSeconds: 200, chromaprint: null, files: [] };
    const j = judgeCandidates(track(a, 200, file('s', 'p', null)), sigOf(a), [candidate], config({ signatureMaxHamming: 10 }));
    expect(j.chosen).toBeNull();
    expect(j.verdicts).toEqual([{ canonicalId: candidate.canonicalId, hamming: 12, gates: null, dropped: 'outside-tolerance' }]);
    const wide = judgeCandidates(track(a, 200, file('s', 'p', null)), sigOf(a), [candidate], config({ signatureMaxHamming: 12 }));
    expect(wide.chosen?.canonicalId).toBe(candidate.canonicalId);
  });

  it('When several candidates pass, then the nearest by cosine distance is chosen', () => {
    const r = rng(11);
    const e = randomEmbedding(r);
    const near = { canonicalId: 'fp_4' + '1'.repeat(50), embedding: perturb(e, 0.005, r), durationSeconds: 200, chromaprint: null, files: [] };
    const far = { canonicalId: 'fp_4' + '0'.repeat(50), embedding: perturb(e, 0.04, r), durationSeconds: 200, chromaprint: null, files: [] };
    const j = judgeCandidates(track(e, 200, file('s', 'p', null)), sigOf(e), [far, near, far], config());
    expect(j.chosen?.canonicalId).toBe(near.canonicalId);
    expect(j.verdicts).toHaveLength(2);
  });
});

describe(mintCanonicalId.name, () => {
  it('When the first ids are taken, then the first free one is returned with the number skipped', () => {
    const sig = sigOf(randomEmbedding(rng(12)));
    const taken = new Set([formatCanonicalId(4, sig), formatCanonicalId(4, nextCode(sig)), formatCanonicalId(4, nextCode(nextCode(sig)))]);
    const minted = mintCanonicalId(4, sig, (id) => taken.has(id));
    expect(minted).toEqual({ id: formatCanonicalId(4, nextCode(nextCode(nextCode(sig)))), collisions: 3 });
    expect(() => mintCanonicalId(4, sig, () => true, 10)).toThrow(/no free canonical id/);
  });
});

describe(resolveAndCommit.name, () => {
  it('When another worker claims the id first with different audio, then the retry takes the next free id', async () => {
    const r = rng(13);
    const { store, resolver } = setup();
    const e = randomEmbedding(r);
    const rival = sameSignatureDifferentSong(e, r);
    let calls = 0;
    const t = track(e, 200, file('jf', 'a', '/m/x/1.flac'));
    const d = await resolveAndCommit(resolver, t, async (decision) => {
      if (calls++ === 0) store.insertSong({ canonicalId: decision.canonicalId, embedding: rival, durationSeconds: 200, files: [file('nd', 'r', '/n/y/1.flac')] });
      return store.commit(decision, t);
    });
    expect(calls).toBe(2);
    expect(d).toMatchObject({ kind: 'new', collisions: 1, canonicalId: formatCanonicalId(4, nextCode(sigOf(e))) });
  });

  it('When another worker inserted the same song first, then the retry merges into it', async () => {
    const r = rng(14);
    const { store, resolver } = setup();
    const e = randomEmbedding(r);
    const t = track(e, 200, file('jf', 'a', '/m/x/1.flac'));
    let calls = 0;
    const d = await resolveAndCommit(resolver, t, async (decision) => {
      if (calls++ === 0) store.insertSong({ canonicalId: decision.canonicalId, embedding: perturb(e, 0.01, r), durationSeconds: 200.2, files: [file('nd', 'r', '/n/y/1.flac')] });
      return store.commit(decision, t);
    });
    expect(d).toMatchObject({ kind: 'merge', canonicalId: formatCanonicalId(4, sigOf(e)) });
    expect(store.size).toBe(1);
  });

  it('When conflicts never stop, then it gives up after the attempt limit', async () => {
    const { resolver } = setup();
    const t = track(randomEmbedding(rng(15)), 200, file('jf', 'a', null));
    await expect(resolveAndCommit(resolver, t, async () => 'conflict', 3)).rejects.toThrow(/3 attempts/);
  });
});
