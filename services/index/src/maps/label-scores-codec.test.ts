import fc from 'fast-check';
import { MSD_TAGS, MTT_TAGS, OTHER_FEATURE_LABELS, formatLabelScores, moodVectorOf } from '@polyphony/contracts';
import { decodeLabelScores, encodeLabelScores, isEncodedLabelScores } from './label-scores-codec';

const roundTrip = (s: string): string | undefined => {
  const b = encodeLabelScores(s);
  return b === undefined ? undefined : decodeLabelScores(b, 0, b.length);
};

describe('label-scores codec (compact mood_vector / other_features)', () => {
  it('When a 5-tag mood_vector or the six other_features are encoded, then they take 16 and 13 bytes and decode to the same string', () => {
    const mood = 'female vocalists:1.000,Hip-Hop:0.512,00s:0.301,rock:0.010,Mellow:0.000';
    const other = 'danceable:0.364,aggressive:0.363,happy:0.888,party:0.551,relaxed:0.037,sad:0.474';
    expect(encodeLabelScores(mood)).toHaveLength(16);
    expect(encodeLabelScores(other)).toHaveLength(13);
    expect(roundTrip(mood)).toBe(mood);
    expect(roundTrip(other)).toBe(other);
    // Other-feature labels in another order or a subset use the pairs form.
    expect(roundTrip('sad:0.900,danceable:0.100')).toBe('sad:0.900,danceable:0.100');
    expect(encodeLabelScores('sad:0.900,danceable:0.100')).toHaveLength(7);
    // MTT labels are in the vocabulary too.
    expect(roundTrip('no vocals:0.250,harpsichord:0.125')).toBe('no vocals:0.250,harpsichord:0.125');
  });

  it('When a string is not exactly label:d.ddd pairs of known labels, then it is not encoded (it stays text)', () => {
    for (const s of ['', 'rock:0.51', 'rock:0.5120', 'rock: 0.512', ' rock:0.512', 'rock:1.001', 'rock:2.000', 'unknown:0.500', 'rock:0.512,', 'rock', 'rock:0.512,,pop:0.100', 'rock:-0.100', 'rock:0.512 ']) {
      expect(encodeLabelScores(s)).toBeUndefined();
    }
  });

  it('When bytes are encoded, then the first byte is one UTF-8 text never starts with, and other bytes are refused', () => {
    const b = encodeLabelScores('rock:0.512')!;
    expect(isEncodedLabelScores(b, 0, b.length)).toBe(true);
    const text = Buffer.from('rock:0.51');
    expect(isEncodedLabelScores(text, 0, text.length)).toBe(false);
    expect(() => decodeLabelScores(text, 0, text.length)).toThrow(/not a compact form/);
    expect(() => decodeLabelScores(Buffer.from([0xff, 250, 0, 1]), 0, 4)).toThrow(/unknown label/);
  });

  it('every string the analysis worker writes round-trips, and any string either round-trips or is left as text (fast-check)', () => {
    const prob = fc.integer({ min: 0, max: 1000 }).map((v) => v / 1000);
    fc.assert(
      fc.property(fc.array(prob, { minLength: 50, maxLength: 50 }), fc.array(prob, { minLength: 6, maxLength: 6 }), (msd, other) => {
        const mood = moodVectorOf(msd);
        const others = formatLabelScores(OTHER_FEATURE_LABELS.map((l, i) => [l, other[i]!] as const));
        expect(roundTrip(mood)).toBe(mood);
        expect(roundTrip(others)).toBe(others);
      }),
      { numRuns: 300 },
    );
    const label = fc.constantFrom(...MSD_TAGS, ...MTT_TAGS, ...OTHER_FEATURE_LABELS, 'x', '');
    const num = fc.oneof(fc.integer({ min: 0, max: 1200 }).map((v) => (v / 1000).toFixed(3)), fc.double().map(String), fc.string({ maxLength: 5 }));
    const pairs = fc.array(fc.tuple(label, num), { maxLength: 8 }).map((ps) => ps.map(([l, n]) => `${l}:${n}`).join(','));
    fc.assert(
      fc.property(fc.oneof(pairs, fc.string({ unit: 'binary', maxLength: 30 })), (s) => {
        const back = roundTrip(s);
        expect(back === undefined || back === s).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});
