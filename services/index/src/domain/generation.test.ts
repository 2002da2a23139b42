import { ArtistLinkCounter } from './generation';

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
