import { ArtistLinkCounter, IndexState, emptyGeneration } from './generation';

describe('ArtistLinkCounter', () => {
  it('When an artist has several provider ids on a server, then the most frequent wins (ties: smallest id)', () => {
    const c = new ArtistLinkCounter();
    c.add('s1', 'abba', 'b');
    c.add('s1', 'abba', 'a');
    c.add('s1', 'abba', 'b');
    c.add('s1', 'queen', 'q2');
    c.add('s1', 'queen', 'q1');
    c.add('s2', 'abba', 'z');
    const links = c.finish();
    expect(links.providerIdOf('s1', 'abba')).toBe('b');
    expect(links.providerIdOf('s1', 'queen')).toBe('q1');
    expect(links.providerIdOf('s2', 'abba')).toBe('z');
    expect(links.keyOfProviderId('s2', 'z')).toBe('abba');
    expect(links.providerIdOf(undefined, 'abba')).toBeUndefined();
    expect([...links.entries()]).toHaveLength(3);
  });
});

describe('IndexState.prepare', () => {
  it('When a generation is prepared, then every task finishes before it is swapped in, and a failing task is reported, not thrown', async () => {
    const state = new IndexState(emptyGeneration());
    const events: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    state.onPrepare(async (g) => {
      events.push(`slow start ${g.generation}`);
      await gate;
      events.push(`slow done ${g.generation}`);
    });
    state.onPrepare(async () => {
      throw new Error('no rows');
    });
    state.onSwap((g) => events.push(`swap ${g.generation}`));
    const next = { ...emptyGeneration(), generation: 7 };
    const errors: unknown[] = [];
    const prepared = state.prepare(next, (err) => errors.push(err));
    await new Promise((r) => setImmediate(r));
    expect(events).toEqual(['slow start 7']);
    expect(state.current().generation).not.toBe(7);
    release();
    await prepared;
    state.swap(next);
    expect(events).toEqual(['slow start 7', 'slow done 7', 'swap 7']);
    expect(errors.map((e) => (e as Error).message)).toEqual(['no rows']);
  });
});
