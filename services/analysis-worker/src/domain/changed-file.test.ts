/**
 * Issue 35, the worker's side of a file changed in place: a mapped file whose message says `changedFile` (and carries
 * the listed stamp) is downloaded and analysed again whole and resolved with `changedFile`; the outcome follows the
 * catalogue's answer. A mapped file without it (or without a stamp) is skipped as before. Real decode and embedder on
 * a synthetic 12 s WAV; the catalogue, media server and claim store are fakes.
 */
import { writeFile } from 'node:fs/promises';
import type { AnalysisTrackRequested, ResolveIdentityRequest, ResolveIdentityResponse, StoreLearnedFeaturesRequest } from '@polyphony/contracts';
import { createLogger } from '@polyphony/platform';
import { syntheticNotesPcm, wavBytes } from '@polyphony/testkit';
import { AnalysisThreadPool } from './audio/cpu-pool';
import type { MusicnnInput } from './musicnn/input';
import type { LearnedModel } from './musicnn/model-state';
import type { CataloguePort, MediaClientFactory, RegistryPort, TrackClaimStore, TrackOutcome } from './ports';
import { TrackProcessor } from './track-processor';

describe('a mapped file changed in place (TrackProcessor)', () => {
  jest.setTimeout(60_000);
  // The per-song DSP runs on a real CPU thread, as in the service.
  const cpu = new AnalysisThreadPool(1);
  afterAll(() => cpu.close());
  const wav = wavBytes(syntheticNotesPcm(11, 12));
  const requests: ResolveIdentityRequest[] = [];
  const outcomes: Array<[string, TrackOutcome, string | undefined]> = [];
  const stored: Array<[string, StoreLearnedFeaturesRequest]> = [];
  let downloads = 0;
  let answer: ResolveIdentityResponse = { itemId: 'item-x', outcome: 'existing' };

  const registry = { getServer: async () => ({ id: 'srv', connection: {} }) } as unknown as RegistryPort;
  const catalogue = {
    mappedProviderIds: async (_s: string, ids: string[]) => new Set(ids),
    songsNeedingTags: async () => new Map(),
    resolve: async (req: ResolveIdentityRequest) => {
      requests.push(req);
      return answer;
    },
    storeLearned: async (itemId: string, learned: StoreLearnedFeaturesRequest) => void stored.push([itemId, learned]),
  } as unknown as CataloguePort;
  const clients = (() => ({
    downloadTrack: async (_id: string, dest: string) => {
      downloads++;
      await writeFile(dest, wav);
      return wav.length;
    },
  })) as unknown as MediaClientFactory;
  const runs = {
    isCancelled: async () => false,
    claimTrack: async () => ({ state: 'absent' }),
    recordOutcome: async (_t: string, _s: string, id: string, outcome: TrackOutcome, itemId?: string) => void outcomes.push([id, outcome, itemId]),
  } as unknown as TrackClaimStore;
  const processor = new TrackProcessor(registry, catalogue, runs, clients, cpu, createLogger({ service: 'test', level: 'error' }));
  const message = (id: string, over: Partial<AnalysisTrackRequested> = {}, stamp: string | null = 'size:2048'): AnalysisTrackRequested => ({
    taskId: 'batch-1',
    serverId: 'srv',
    track: { id, title: `t ${id}`, artist: 'a', path: `/music/${id}.flac`, ...(stamp ? { fileStamp: stamp } : {}) },
    ...over,
  });

  beforeEach(() => {
    requests.length = 0;
    outcomes.length = 0;
    stored.length = 0;
    downloads = 0;
  });

  it('When a mapped file comes without changedFile (or changedFile without a stamp), then nothing is downloaded and it is skipped as mapped', async () => {
    expect((await processor.process(message('m1'), false)).outcome).toBe('skipped_mapped');
    expect((await processor.process(message('m2', { changedFile: true }, null), false)).outcome).toBe('skipped_mapped');
    expect(downloads).toBe(0);
    expect(requests).toHaveLength(0);
  });

  it('When a mapped file comes with changedFile, then it is analysed again and resolved with changedFile and its new stamp; the outcome follows the answer', async () => {
    answer = { itemId: 'item-same', outcome: 'existing', reanalysis: 'same', previousItemId: 'item-same' };
    expect(await processor.process(message('c1', { changedFile: true }), false)).toMatchObject({ outcome: 'mapped_existing', itemId: 'item-same' });
    answer = { itemId: 'item-other', outcome: 'existing', reanalysis: 'moved', previousItemId: 'item-old' };
    expect(await processor.process(message('c2', { changedFile: true }, 'size:4096'), false)).toMatchObject({ outcome: 'mapped_existing', itemId: 'item-other' });
    expect(downloads).toBe(2);
    expect(requests.map((r) => [r.providerId, r.changedFile, r.metadata.fileStamp, r.embedding.length])).toEqual([
      ['c1', true, 'size:2048', 200],
      ['c2', true, 'size:4096', 200],
    ]);
    expect(requests[0]!.durationSeconds).toBeCloseTo(12, 0);
    expect(outcomes).toEqual([
      ['c1', 'mapped_existing', 'item-same'],
      ['c2', 'mapped_existing', 'item-other'],
    ]);
  });

  it('When a new copy of a stored song is analysed with the learned model, then its tags are sent with keepExisting (the song keeps the tags it has)', async () => {
    // Hand-made network outputs (one patch, tag i = i/100): the processor only forwards them.
    const tags = (n: number) => ({ patches: 1, tags: Float32Array.from({ length: n }, (_, i) => i / 100) });
    // The front end runs on the pool's thread (musicnnInput) and only the networks in the analyser (analyseInput).
    const inputs: MusicnnInput[] = [];
    const analyser = {
      modelId: 'musicnn-msd@test',
      maxPatches: 2,
      analyse: async () => {
        throw new Error('the front end ran on the event loop');
      },
      analyseInput: async (input: MusicnnInput) => {
        inputs.push(input);
        return { starts: input.starts, msd: tags(50), mtt: tags(50), melMs: input.melMs, networkMs: 0, mttMs: 0 };
      },
    };
    const learned = { analyser } as unknown as LearnedModel;
    const unmapped = { ...catalogue, mappedProviderIds: async () => new Set<string>() } as CataloguePort;
    const withModel = new TrackProcessor(registry, unmapped, runs, clients, cpu, createLogger({ service: 'test', level: 'error' }), undefined, learned);
    answer = { itemId: 'item-stored', outcome: 'existing' };
    expect(await withModel.process(message('copy-1'), false)).toMatchObject({ outcome: 'mapped_existing', itemId: 'item-stored' });
    expect(requests[0]!.learned?.tagsModel).toBe('musicnn-msd@test');
    expect(stored).toEqual([['item-stored', expect.objectContaining({ tagsModel: 'musicnn-msd@test', keepExisting: true })]]);
    // 12 s = 751 frames = 4 patches, 2 of them kept (the analyser's budget), computed on the thread as inline.
    expect(inputs.map((i) => [i.variant, i.starts, i.input.length])).toEqual([['tags', [0, 561], 2 * 187 * 96]]);
  });
});
