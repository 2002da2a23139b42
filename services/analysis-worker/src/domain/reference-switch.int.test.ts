/**
 * A new file during the embedder switch after an import from the reference (issue 34): the catalogue serves the
 * reference's vectors (`audiomuse:musicnn-msd-200`) and refuses a resolve without one (409 embedder_version_mismatch,
 * the message naming the served version, as identity.service.ts writes it). The worker, with the MusiCNN model loaded,
 * then resolves again with the reference's vector of the same audio as an alternate (TrackProcessor.resolveServed).
 * The catalogue here is a stand-in that applies identity's rule; the analysis (download of a real Wesnoth file, decode,
 * dsp-v1, MusiCNN MSD + MTT, fusion) and the run bookkeeping (PostgreSQL) are real.
 * Skips (with a message) only when the MusiCNN weights are absent.
 * @jest-environment ./services/analysis-worker/src/domain/musicnn/__tests__/shared-typed-arrays-env.js
 */
import { copyFile } from 'node:fs/promises';
import { REFERENCE_EMBEDDER_VERSION, embedderMismatchMessage, type AnalysisTrackRequested, type ResolveIdentityRequest } from '@polyphony/contracts';
import { AppError, createLogger } from '@polyphony/platform';
import { createTestDatabase, migratedDataSource, type TestDatabase } from '@polyphony/testkit';
import type { DataSource } from 'typeorm';
import { analysisMigrations } from '../store/migrations';
import { RunRepository } from '../store/run.repository';
import { decodeToPcm } from './audio/decode';
import { AnalysisThreadPool } from './audio/cpu-pool';
import { wesnoth } from './audio/__tests__/wesnoth';
import { LearnedModel } from './musicnn/model-state';
import { cosineSimilarity } from './musicnn/reference-vector';
import { modelsPresent, testModelsDir } from './musicnn/__tests__/models';
import type { CataloguePort, MediaClientFactory, RegistryPort } from './ports';
import { TrackProcessor } from './track-processor';

const present = modelsPresent('new files during the switch after an import');
const d = present ? describe : describe.skip;

d('a new file while the catalogue serves the reference vectors (real analysis, stand-in catalogue)', () => {
  jest.setTimeout(300_000);
  const STEM = 'elf-land';
  const cpu = new AnalysisThreadPool(1);
  const serverId = 'srv-switch';
  let db: TestDatabase;
  let ds: DataSource;
  let runs: RunRepository;
  let runId: string;
  let learned: LearnedModel;
  let processor: TrackProcessor;
  /** The version the stand-in catalogue serves. */
  let served = REFERENCE_EMBEDDER_VERSION;
  const requests: ResolveIdentityRequest[] = [];
  const message = (id: string): AnalysisTrackRequested => ({ taskId: runId, serverId, track: { id, title: `t ${id}`, artist: 'a' } });

  beforeAll(async () => {
    db = await createTestDatabase('analysis_reference_switch');
    ds = await migratedDataSource(db, 'analysis', analysisMigrations);
    runs = new RunRepository(ds);
    runId = (await runs.tasks.create('coordinator', 600_000)).run.id;
    const logger = createLogger({ service: 'test', level: 'error' });
    learned = new LearnedModel(testModelsDir(), 2, logger, 'onnxruntime', true, 'float');
    await learned.load();
    expect(learned.status().status).toBe('ready');
    const registry = { getServer: async () => ({ id: serverId, connection: {} }) } as unknown as RegistryPort;
    const catalogue = {
      mappedProviderIds: async () => new Set<string>(),
      // identity.service.ts's rule: decide with the request's vector of the served version, else 409 naming it.
      resolve: async (req: ResolveIdentityRequest) => {
        requests.push(req);
        const versions = [req.embedderVersion, ...(req.alternateEmbeddings ?? []).map((v) => v.embedderVersion)];
        if (!versions.includes(served)) throw new AppError('embedder_version_mismatch', embedderMismatchMessage(served, versions), 409);
        return { itemId: `item-${req.providerId}`, outcome: 'existing' };
      },
      storeLearned: async () => undefined,
    } as unknown as CataloguePort;
    const clients = (() => ({ downloadTrack: (_id: string, dest: string) => copyFile(wesnoth(STEM), dest) })) as unknown as MediaClientFactory;
    processor = new TrackProcessor(registry, catalogue, runs, clients, cpu, logger, undefined, learned);
    processor.claimWaitMs = 0;
  });
  afterAll(async () => {
    await cpu.close();
    learned?.analyser?.dispose();
    await ds?.destroy();
    await db?.drop();
  });

  it("When the catalogue serves the reference's vectors, then the worker resolves again with the reference's vector of the file and the song is stored", async () => {
    await runs.enqueue(runId, serverId, ['new-1']);
    const result = await processor.process(message('new-1'), false);
    expect(result).toMatchObject({ outcome: 'mapped_existing', itemId: 'item-new-1' });
    expect(requests).toHaveLength(2);
    const [first, second] = requests as [ResolveIdentityRequest, ResolveIdentityRequest];
    // First the usual request: the learned (target) vector with dsp-v1 as its alternate.
    expect([first.embedderVersion, ...(first.alternateEmbeddings ?? []).map((v) => v.embedderVersion)]).toEqual(['tfjs:musicnn-fusion-v1', 'dsp-v1']);
    // Then the same with the reference's vector added; the target version is unchanged (the song counts as covered).
    expect(second.embedderVersion).toBe('tfjs:musicnn-fusion-v1');
    expect(second.activeEmbedderVersion).toBe('tfjs:musicnn-fusion-v1');
    expect(second.embedding).toEqual(first.embedding);
    const ref = second.alternateEmbeddings!.find((v) => v.embedderVersion === REFERENCE_EMBEDDER_VERSION)!;
    expect(ref.embedding).toHaveLength(200);
    // It is the reference's layer of this very file (as computed directly), not another vector.
    const direct = await learned.analyser!.referenceVector((await decodeToPcm(wesnoth(STEM))).samples);
    expect(cosineSimilarity(ref.embedding, direct.vector)).toBeGreaterThanOrEqual(0.99999);
    expect(cosineSimilarity(ref.embedding, second.embedding)).toBeLessThan(0.99);
    expect((await db.query<{ outcome: string }>(`SELECT outcome FROM analysis.run_tracks WHERE run_id = $1 AND provider_id = 'new-1'`, [runId]))[0]!.outcome).toBe('mapped_existing');
  });

  it('When the catalogue serves another version the worker cannot produce, then the mismatch is thrown as before, without a second resolve', async () => {
    served = 'some-other-embedder-v9';
    requests.length = 0;
    await runs.enqueue(runId, serverId, ['new-2']);
    const err = await processor.process(message('new-2'), true).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('embedder_version_mismatch');
    expect(requests).toHaveLength(1);
  });
});
