import { ValidationError } from '@polyphony/platform';
import { buildIvfIndex } from '@polyphony/vector-engine';
import { decodeToken, encodeToken, firstRowAfter } from './sync.service';

describe('sync paging helpers', () => {
  it('When a token is encoded and decoded, then the id comes back; malformed tokens are refused', () => {
    expect(decodeToken(encodeToken('fp_4abc'))).toBe('fp_4abc');
    expect(() => decodeToken('not a token!')).toThrow(ValidationError);
  });

  it('When looking for the first row after an id, then byte order is used', async () => {
    const ids = ['a', 'b', 'bb', 'c'];
    const { index } = await buildIvfIndex([{ ids, vectors: Float32Array.from({ length: 8 }, (_, i) => i + 1) }], { dim: 2 });
    expect(firstRowAfter(index, '')).toBe(0);
    expect(firstRowAfter(index, 'b')).toBe(2);
    expect(firstRowAfter(index, 'ba')).toBe(2);
    expect(firstRowAfter(index, 'c')).toBe(4);
  });
});
