/**
 * The track processor's per-song DSP on the CPU threads (real ffmpeg decode, real threads; catalogue, media server and
 * claim store are fakes): the event loop keeps ticking while a real song is analysed and fingerprinted, a too-short
 * file keeps its `too_short` exclusion across the thread boundary, and a thread that dies mid-track makes the attempt
 * fail transiently: the consumer retries it (not dead-lettered) and a new thread analyses it.
 */
import { copyFile, writeFile } from 'node:fs/promises';
import { AnalysisTrackCompleted, RoutingKeys, type AnalysisTrackRequested, type PutFingerprintRequest } from '@polyphony/contracts';
import { InMemoryBus, Metrics, createLogger } from '@polyphony/platform';
import { syntheticNotesPcm, wavBytes, wesnothFiles } from '@polyphony/testkit';
import { TRACK_QUEUE, consumeTrackRequests } from '../bus/track-requested.consumer';
import { AnalysisThreadPool, type PcmHolder, type TrackCpu } from './audio/cpu-pool';
import type { CataloguePort, MediaClientFactory, RegistryPort, TrackClaimStore, TrackOutcome } from './ports';
import { TrackProcessor } from './track-processor';
import { killFirstThreadOnItsJob } from './audio/__tests__/thread-death';

async function until(cond: () => boolean, what: string, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('TrackProcessor with its DSP on CPU threads', () => {
  jest.setTimeout(180_000);
  // A 5-minute song (about 1 s of DSP on the build machine: ~100 ticks of 10 ms, well above the asserted 20).
  const song = wesnothFiles().find((f) => f.endsWith('/battle.ogg')) ?? wesnothFiles()[0]!;
  let audio: Buffer | string = song;
  const outcomes: Array<[string, TrackOutcome, string | undefined]> = [];
  const exclusions: Array<[string, string]> = [];
  const prints: PutFingerprintRequest[] = [];
  let pool: AnalysisThreadPool;

  const registry = { getServer: async () => ({ id: 'srv', connection: {} }) } as unknown as RegistryPort;
  const catalogue = {
    mappedProviderIds: async () => new Set<string>(),
    resolve: async (req: { providerId: string }) => ({ itemId: `item-${req.providerId}`, outcome: 'existing' }),
    storeLearned: async () => undefined,
    storeFingerprint: async (_itemId: string, print: PutFingerprintRequest) => void prints.push(print),
  } as unknown as CataloguePort;
  const clients = (() => ({
    downloadTrack: async (_id: string, dest: string) => (typeof audio === 'string' ? copyFile(audio, dest) : writeFile(dest, audio)),
  })) as unknown as MediaClientFactory;
  const runs = {
    isCancelled: async () => false,
    claimTrack: async () => ({ state: 'absent' }),
    recordOutcome: async (_t: string, _s: string, id: string, outcome: TrackOutcome, _item?: string, error?: string) => void outcomes.push([id, outcome, error]),
    exclude: async (_s: string, file: { providerId: string }, _hash: string, code: string) => void exclusions.push([file.providerId, code]),
  } as unknown as TrackClaimStore;
  const logger = createLogger({ service: 'test', level: 'error' });
  const message = (id: string): AnalysisTrackRequested => ({ taskId: 'run-1', serverId: 'srv', track: { id, title: `t ${id}`, artist: 'a' } });

  beforeEach(() => {
    outcomes.length = 0;
    exclusions.length = 0;
    prints.length = 0;
    audio = song;
    pool = new AnalysisThreadPool(1);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await pool.close();
  });

  it('When a real song is analysed, then a 10 ms interval keeps ticking during its DSP steps (more than 20 ticks) and the song is stored with its fingerprint', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    // Ticks counted only while a DSP step is in flight (the decode and the fakes are asynchronous anyway).
    let duringDsp = 0;
    const counted = <T>(step: (pcm: PcmHolder) => Promise<T>) => async (pcm: PcmHolder): Promise<T> => {
      const before = ticks;
      try {
        return await step(pcm);
      } finally {
        duringDsp += ticks - before;
      }
    };
    const cpu: TrackCpu = { embedderVersion: pool.embedderVersion, analyseTrack: counted((p) => pool.analyseTrack(p)), recordingFingerprint: counted((p) => pool.recordingFingerprint(p)) };
    const processor = new TrackProcessor(registry, catalogue, runs, clients, cpu, logger);
    try {
      const result = await processor.process(message('song-1'), false);
      expect(result).toMatchObject({ outcome: 'mapped_existing', itemId: 'item-song-1' });
    } finally {
      clearInterval(timer);
    }
    expect(duringDsp).toBeGreaterThan(20);
    expect(prints).toHaveLength(1);
    expect(prints[0]!.landmarks).toBeGreaterThan(100);
    expect(outcomes).toEqual([['song-1', 'mapped_existing', undefined]]);
  });

  it('When the file is shorter than a second, then the thread answers too short and the file is failed and excluded as too_short', async () => {
    audio = wavBytes(syntheticNotesPcm(3, 0.5));
    const processor = new TrackProcessor(registry, catalogue, runs, clients, pool, logger);
    const result = await processor.process(message('short-1'), false);
    expect(result.outcome).toBe('failed');
    expect(exclusions).toEqual([['short-1', 'too_short']]);
    expect(outcomes).toEqual([['short-1', 'failed', expect.stringMatching(/too short to analyse/)]]);
    expect(prints).toHaveLength(0);
  });

  it('When the CPU thread dies mid-track, then the consumer retries the track (no dead letter, no failure recorded) and a new thread analyses it', async () => {
    const workers = killFirstThreadOnItsJob();
    const processor = new TrackProcessor(registry, catalogue, runs, clients, pool, logger);
    const bus = new InMemoryBus({ retryDelayMs: 1, maxRetryDelayMs: 2 });
    const completed: string[] = [];
    await bus.consume({ queue: 'test.completed', bindings: [RoutingKeys.analysisTrackCompleted], schema: AnalysisTrackCompleted, handler: async (m) => void completed.push(m.outcome) });
    await consumeTrackRequests(bus, processor, 1, new Metrics('analysis-worker-test'));
    await bus.publish(RoutingKeys.analysisTrackRequested, message('song-2'));
    await until(() => completed.length === 1, 'the completed event');
    expect(completed).toEqual(['mapped_existing']);
    expect(outcomes).toEqual([['song-2', 'mapped_existing', undefined]]);
    // The first thread died on the analysis; the retry ran analysis and fingerprint on its replacement.
    expect(workers).toHaveLength(3);
    expect(new Set(workers).size).toBe(2);
    expect(prints).toHaveLength(1);
    expect(await bus.listDeadLetters(TRACK_QUEUE, 10)).toEqual([]);
    await bus.close();
  });
});
