import { artistKey, foldText, searchTokens, songKey } from './text';

describe('foldText', () => {
  it.each([
    ['Beyoncé', 'beyonce'],
    ['Café  Noir!', 'cafe noir'],
    ['ÉTÉ – Brûlant', 'ete brulant'],
    ['AC/DC', 'ac dc'],
    ['ﬁre', 'fire'],
    ['Sigur Rós', 'sigur ros'],
    ['Motörhead', 'motorhead'],
    ['Ølafur', 'ølafur'],
    ['  ', ''],
  ])('When folding %j, then it gives %j', (input, expected) => {
    expect(foldText(input)).toBe(expected);
  });

  it('When given null or undefined, then it gives the empty string', () => {
    expect(foldText(null)).toBe('');
    expect(foldText(undefined)).toBe('');
  });
});

describe('searchTokens', () => {
  it('When the query repeats words, then each token appears once, in order', () => {
    expect(searchTokens('The the BEATLES, the')).toEqual(['the', 'beatles']);
  });
  it('When the query has more than the maximum tokens, then the rest is dropped', () => {
    expect(searchTokens('a b c d e', 3)).toEqual(['a', 'b', 'c']);
  });
});

describe('songKey and artistKey', () => {
  it('When two songs differ only in case and accents, then their keys are equal', () => {
    expect(songKey('Café Noir', 'Beyoncé')).toBe(songKey('CAFE noir', 'beyonce'));
    expect(songKey('A', 'B C')).not.toBe(songKey('A B', 'C'));
    expect(artistKey('The Beatles')).toBe('the beatles');
  });
});
