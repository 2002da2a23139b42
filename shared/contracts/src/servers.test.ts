import { PlexClientId } from './servers';

describe('PlexClientId (the X-Plex-Client-Identifier sent to plex.tv)', () => {
  it('When the id is printable ASCII, then it is accepted', () => {
    expect(PlexClientId.parse('polyphony-5f0c2a3e-7d1b-4c55-9a0e-0123456789ab')).toBe('polyphony-5f0c2a3e-7d1b-4c55-9a0e-0123456789ab');
  });
  it('When the id holds characters a header cannot carry (non-ASCII, space, control), then it is refused', () => {
    for (const bad of ['𳗐򻕀', 'a b', 'a\nb', 'é', '']) expect(PlexClientId.safeParse(bad).success).toBe(false);
  });
});
