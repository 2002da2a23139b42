/** The steering schema of POST /api/clap/search and the concept table (steering.ts). */
import { MSD_TAGS, MTT_TAGS, OTHER_FEATURE_LABELS } from './learned';
import { ClapSearchBody } from './semantic';
import { CONCEPT_KIND, CONCEPT_KINDS, STEER_CONCEPTS, Steering, foldConcept } from './steering';

describe('steering concepts', () => {
  it('When the label lists are folded, then every label is one concept with a kind, shared labels once', () => {
    const folded = new Set([...MSD_TAGS, ...MTT_TAGS, ...OTHER_FEATURE_LABELS].map(foldConcept));
    expect(new Set(STEER_CONCEPTS)).toEqual(folded);
    expect(STEER_CONCEPTS).toHaveLength(folded.size);
    expect(Object.keys(CONCEPT_KIND).sort()).toEqual([...folded].sort());
    for (const k of Object.values(CONCEPT_KIND)) expect(CONCEPT_KINDS).toContain(k);
    expect(foldConcept('Hip-Hop')).toBe('hip hop');
    expect(CONCEPT_KIND['piano']).toBe('instrument');
    expect(CONCEPT_KIND['hip hop']).toBe('genre');
  });

  it('When steering is well formed, then concepts are folded and weights kept', () => {
    expect(Steering.parse([{ concept: ' Piano ', weight: 0.5 }, { concept: 'Hip-Hop', weight: -1 }])).toEqual([{ concept: 'piano', weight: 0.5 }, { concept: 'hip hop', weight: -1 }]);
    expect(ClapSearchBody.parse({ query: 'calm', steering: [{ concept: 'drums', weight: -0.3 }] }).steering).toEqual([{ concept: 'drums', weight: -0.3 }]);
    expect(ClapSearchBody.parse({ query: 'calm' }).steering).toBeUndefined();
  });

  it.each([
    ['an unknown concept', [{ concept: 'bagpipes', weight: 1 }], "unknown concept 'bagpipes'"],
    ['a weight above 1', [{ concept: 'piano', weight: 1.5 }], 'weight must be between -1 and 1'],
    ['a weight below -1', [{ concept: 'piano', weight: -2 }], 'weight must be between -1 and 1'],
    ['a weight that is not a number', [{ concept: 'piano', weight: 'lots' }], 'weight must be a number'],
    ['a repeated concept', [{ concept: 'piano', weight: 1 }, { concept: 'Piano', weight: -1 }], 'a concept may appear only once'],
    ['an unknown field', [{ concept: 'piano', weight: 1, boost: 2 }], 'Unrecognized key'],
    ['nine concepts', ['rock', 'pop', 'jazz', 'folk', 'punk', 'blues', 'funk', 'soul', 'metal'].map((concept) => ({ concept, weight: 0.1 })), 'at most 8 steering concepts'],
  ])('When steering has %s, then it is refused with a message saying why', (_what, steering, message) => {
    const r = ClapSearchBody.safeParse({ query: 'calm music', steering });
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error!.issues)).toContain(message);
  });
});
