import { MSD_TAGS, MTT_TAGS, OTHER_FEATURE_LABELS } from '@polyphony/contracts';
import { foldText } from '../core/text';
import { LABEL_COLUMNS, MTT_OFFSET, OTHER_OFFSET, SYNONYMS, parseQuery } from './vocabulary';

describe('text-search vocabulary', () => {
  it('When the synonym table is read, then every target is a MusiCNN tag label or an other-feature label', () => {
    const labels = new Set([...MSD_TAGS, ...MTT_TAGS, ...OTHER_FEATURE_LABELS].map((l) => foldText(l)));
    for (const [word, { tags }] of Object.entries(SYNONYMS)) {
      for (const t of tags) expect({ word, tag: t, known: labels.has(foldText(t)) }).toEqual({ word, tag: t, known: true });
    }
  });

  it('When a query holds multi-word labels, synonyms, stop words and other words, then phrases win and stop words drop', () => {
    const { concepts, words } = parseQuery('Some calm female vocalists hip-hop music by Miles Davis');
    expect(concepts.map((c) => c.term)).toEqual(['calm', 'female vocalists', 'hip hop']);
    expect(words).toEqual(['miles', 'davis']);
    const calm = concepts[0]!;
    expect(calm.columns).toEqual(expect.arrayContaining([...LABEL_COLUMNS.get('chill')!, ...LABEL_COLUMNS.get('mellow')!]));
  });

  it('When a label exists in both tag lists and as an other feature, then the concept covers every column', () => {
    const { concepts } = parseQuery('happy dance');
    expect(concepts[0]!.columns).toEqual([MSD_TAGS.indexOf('happy'), OTHER_OFFSET + OTHER_FEATURE_LABELS.indexOf('happy')]);
    expect(concepts[1]!.columns).toEqual([MSD_TAGS.indexOf('dance'), MTT_OFFSET + MTT_TAGS.indexOf('dance')]);
  });

  it('When tempo and energy words are used, then they carry a descriptor', () => {
    const { concepts } = parseQuery('slow quiet upbeat');
    expect(concepts.map((c) => c.descriptor)).toEqual(['slow', 'quiet', 'fast']);
  });
});
