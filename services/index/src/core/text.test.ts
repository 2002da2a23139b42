import { SeededRandom } from '@polyphony/vectors';
import { artistKey, foldText, foldUnicode, searchTokens, songKey } from './text';

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

  it('When the text is ASCII, then the shortcut gives what the Unicode passes give (every ASCII character, random strings)', () => {
    const all = Array.from({ length: 128 }, (_, c) => String.fromCharCode(c)).join('');
    expect(foldText(all)).toBe(foldUnicode(all));
    for (let c = 0; c < 128; c++) expect(foldText(`x${String.fromCharCode(c)}Y`)).toBe(foldUnicode(`x${String.fromCharCode(c)}Y`));
    const rng = new SeededRandom(5);
    for (let i = 0; i < 2000; i++) {
      const s = Array.from({ length: 1 + rng.nextInt(24) }, () => String.fromCharCode(rng.nextInt(128))).join('');
      expect(foldText(s)).toBe(foldUnicode(s));
    }
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
