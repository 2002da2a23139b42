import {
  CANONICAL_ID_LENGTH,
  computeSignature,
  formatCanonicalId,
  hammingDistance,
  hammingDistancePacked,
  isUnsignableId,
  nextCode,
  parseCanonicalId,
  signatureBit,
  signatureFromHex,
  signatureToHex,
  unsignableCanonicalId,
} from './signature';

function embeddingFrom(f: (d: number) => number): Float64Array {
  return Float64Array.from({ length: 200 }, (_, d) => f(d));
}

function codeOf(embedding: ArrayLike<number>): Uint32Array {
  const r = computeSignature(embedding);
  if (!r.ok) throw new Error(`unexpected unsignable: ${r.reason}`);
  return r.code;
}

describe('computeSignature', () => {
  it('When only dimension 0 is high, then it is the most significant bit of the first hex character', () => {
    const hex = signatureToHex(codeOf(embeddingFrom((d) => (d === 0 ? 1 : 0))));
    expect(hex).toBe('8' + '0'.repeat(49));
  });

  it('When only dimension 3 or 199 is high, then the bit lands big-endian at the end of its nibble', () => {
    expect(signatureToHex(codeOf(embeddingFrom((d) => (d === 3 ? 1 : 0))))).toBe('1' + '0'.repeat(49));
    expect(signatureToHex(codeOf(embeddingFrom((d) => (d === 196 ? 1 : 0))))).toBe('0'.repeat(49) + '8');
    expect(signatureToHex(codeOf(embeddingFrom((d) => (d === 199 ? 1 : 0))))).toBe('0'.repeat(49) + '1');
  });

  it('When values rise with the dimension, then the upper half of the dimensions is set', () => {
    expect(signatureToHex(codeOf(embeddingFrom((d) => d)))).toBe('0'.repeat(25) + 'f'.repeat(25));
  });

  it('When every fifth dimension is high, then the code repeats 1000 0100 0010 0001 0000', () => {
    expect(signatureToHex(codeOf(embeddingFrom((d) => (d % 5 === 0 ? 2.5 : -1))))).toBe('84210'.repeat(10));
  });

  it('When compared with numpy packbits on the same vector, then the hex is identical', () => {
    // Oracle: numpy 2.4, bits = (e - e.mean()) > 0, np.packbits(bits).hex() for
    // e[d] = ((d * 7919) % 1000) / 1000 - 0.5.
    const hex = signatureToHex(codeOf(embeddingFrom((d) => ((d * 7919) % 1000) / 1000 - 0.5)));
    expect(hex).toBe('7e07e07e03f03f03f01f81f81f80fc0fc0fe07e07e07f03f03');
  });

  it('When a value equals the mean exactly, then its bit is clear (strictly above only)', () => {
    // mean of [2, 0, 1 x 198] is 1: dimensions holding exactly 1 stay 0.
    const code = codeOf(embeddingFrom((d) => (d === 0 ? 2 : d === 1 ? 0 : 1)));
    expect(signatureBit(code, 0)).toBe(1);
    expect(signatureToHex(code)).toBe('8' + '0'.repeat(49));
  });

  it('When the embedding is shifted or scaled, then the signature does not change', () => {
    const base = embeddingFrom((d) => Math.sin(d * 0.37) + (d % 7) * 0.1);
    const moved = base.map((x) => x * 3.5 - 12);
    expect(signatureToHex(codeOf(moved))).toBe(signatureToHex(codeOf(base)));
  });

  it.each([
    ['wrong-dimension', new Float64Array(199).map((_, i) => i)],
    ['wrong-dimension', new Float64Array(201).map((_, i) => i)],
    ['non-finite', embeddingFrom((d) => (d === 17 ? NaN : d))],
    ['non-finite', embeddingFrom((d) => (d === 5 ? Infinity : d))],
    ['non-finite', embeddingFrom((d) => (d % 2 ? 1.7e308 : 1))],
    ['constant', embeddingFrom(() => 0.25)],
  ])('When the embedding is invalid (%s), then there is no signature', (reason, embedding) => {
    expect(computeSignature(embedding)).toEqual({ ok: false, reason });
  });
});

describe('hex and id helpers', () => {
  it('When a code goes to hex and back, then it is unchanged and the padding bits stay zero', () => {
    const hex = '7e07e07e03f03f03f01f81f81f80fc0fc0fe07e07e07f03f03';
    const code = signatureFromHex(hex);
    expect(signatureToHex(code)).toBe(hex);
    expect((code[6] as number) & 0x00ffffff).toBe(0);
  });

  it('When the hex is malformed, then parsing throws', () => {
    expect(() => signatureFromHex('abc')).toThrow(RangeError);
    expect(() => signatureFromHex('g'.repeat(50))).toThrow(RangeError);
  });

  it('When an id is formatted and parsed, then version and code survive', () => {
    const code = signatureFromHex('0123456789abcdef0123456789abcdef0123456789abcdef01');
    const id = formatCanonicalId(4, code);
    expect(id).toBe('fp_40123456789abcdef0123456789abcdef0123456789abcdef01');
    expect(id).toHaveLength(CANONICAL_ID_LENGTH);
    const parsed = parseCanonicalId(id);
    expect(parsed?.version).toBe(4);
    expect(signatureToHex(parsed?.code as Uint32Array)).toBe(signatureToHex(code));
  });

  it('When the text is not a canonical id, then parse returns null', () => {
    for (const text of ['a1b2c3', 'fp_4' + '0'.repeat(49), 'fp_4' + 'A'.repeat(50), 'fp_12' + '0'.repeat(50), 'fp_4' + '0'.repeat(50) + '_2']) {
      expect(parseCanonicalId(text)).toBeNull();
    }
  });

  it('When the version is not a digit, then formatting throws', () => {
    expect(() => formatCanonicalId(10, new Uint32Array(7))).toThrow(RangeError);
  });

  it('When an unsignable id is made, then it is fp_0 + 50 hex, stable per file, and in the unsignable namespace', () => {
    const a = unsignableCanonicalId('server-1', 'track-9');
    expect(a).toMatch(/^fp_0[0-9a-f]{50}$/);
    expect(unsignableCanonicalId('server-1', 'track-9')).toBe(a);
    expect(unsignableCanonicalId('server-1', 'track-8')).not.toBe(a);
    // "\0" separates the parts: ("a", "b\0c") and ("a\0b", "c") would only collide without it being in the ids.
    expect(unsignableCanonicalId('s1', 'x')).not.toBe(unsignableCanonicalId('s', '1x'));
    expect(isUnsignableId(a)).toBe(true);
    expect(isUnsignableId(formatCanonicalId(4, new Uint32Array(7)))).toBe(false);
  });
});

describe('nextCode', () => {
  it('When incremented, then the last hex digit counts up and carries across words', () => {
    expect(signatureToHex(nextCode(signatureFromHex('0'.repeat(50))))).toBe('0'.repeat(49) + '1');
    expect(signatureToHex(nextCode(signatureFromHex('0'.repeat(48) + 'ff')))).toBe('0'.repeat(47) + '100');
    expect(signatureToHex(nextCode(signatureFromHex('0'.repeat(40) + 'ffffffffff')))).toBe('0'.repeat(39) + '10000000000');
  });

  it('When the code is all ones, then it wraps to zero', () => {
    expect(signatureToHex(nextCode(signatureFromHex('f'.repeat(50))))).toBe('0'.repeat(50));
  });
});

describe('Hamming distance', () => {
  it('When codes differ in known bits, then the distance counts exactly those bits', () => {
    const a = signatureFromHex('0'.repeat(50));
    const b = signatureFromHex('8' + '0'.repeat(48) + '3');
    expect(hammingDistance(a, b)).toBe(3);
    expect(hammingDistance(signatureFromHex('f'.repeat(50)), a)).toBe(200);
    expect(hammingDistance(b, b)).toBe(0);
  });

  it('When computed on a packed array, then it equals the plain distance', () => {
    const a = signatureFromHex('7e07e07e03f03f03f01f81f81f80fc0fc0fe07e07e07f03f03');
    const b = signatureFromHex('0123456789abcdef0123456789abcdef0123456789abcdef01');
    const packed = new Uint32Array(14);
    packed.set(a, 7);
    expect(hammingDistancePacked(packed, 7, b)).toBe(hammingDistance(a, b));
  });
});
