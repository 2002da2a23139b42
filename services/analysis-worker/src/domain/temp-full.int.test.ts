/**
 * Issue 36 "resource exhaustion: the analysis temp directory full". The worker's temp root is a real tmpfs of
 * 256 KiB (mounted by the test; needs root, skipped with a message otherwise) and the media server's download
 * writes a 10 s WAV (about 320 KB) into it, so the write fails with the kernel's ENOSPC:
 * - the attempt fails transiently (`TempDirectoryFullError`, retried by the bus), logs an error naming the
 *   directory, gives the track's claim back and excludes nothing (before the fix the song was excluded as
 *   `download_failed` until its metadata changed);
 * - once the filesystem is grown (`mount -o remount,size=8m`: the space is back) the retry analyses the track;
 * - on its final attempt with the disk still full the track is recorded failed with that reason, not excluded,
 *   so the next run tries it again.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import type { AnalysisTrackRequested } from '@polyphony/contracts';
import { createLogger, createServiceDataSource, isTransientFault, migrateSchema } from '@polyphony/platform';
import { createTestDatabase, mountTmpfs, syntheticNotesPcm, unmountTmpfs, wavBytes, type TestDatabase } from '@polyphony/testkit';
import type { DataSource } from 'typeorm';
import { analysisMigrations } from '../store/migrations';
import { RunRepository } from '../store/run.repository';
import { AnalysisThreadPool } from './audio/cpu-pool';
import type { CataloguePort, MediaClientFactory, RegistryPort } from './ports';
import { TempDirectoryFullError, TrackProcessor } from './track-processor';

describe('analysis temp directory full (a real small tmpfs)', () => {
  const cpu = new AnalysisThreadPool(1);
  jest.setTimeout(120_000);
  let db: TestDatabase;
  let ds: DataSource;
  let runs: RunRepository;
  let runId: string;
  let mount: string | undefined;
  const errors: Array<{ message: string; meta: Record<string, unknown> }> = [];
  const resolved: string[] = [];
  const serverId = 'srv-full';
  const wav = wavBytes(syntheticNotesPcm(7, 10));
  const message = (id: string): AnalysisTrackRequested => ({ taskId: runId, serverId, track: { id, title: `t ${id}`, artist: 'a' } });
  const row = async (id: string) =>
    (await db.query<{ outcome: string; claimed_by: string | null; error: string | null }>(`SELECT outcome, claimed_by, error FROM analysis.run_tracks WHERE run_id = $1 AND provider_id = $2`, [runId, id]))[0];
  const exclusions = async () => Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM analysis.exclusions WHERE server_id = $1`, [serverId]))[0]!.n);

  let processor: TrackProcessor;
  beforeAll(async () => {
    mount = mountTmpfs('256k', 'temp-full test');
    if (!mount) return;
    db = await createTestDatabase('analysis_temp_full');
    ds = createServiceDataSource({ url: db.url, schema: 'analysis', migrations: analysisMigrations });
    await ds.initialize();
    await migrateSchema(ds);
    runs = new RunRepository(ds);
    runId = (await runs.tasks.create('coordinator', 600_000)).run.id;
    const registry = { getServer: async () => ({ id: serverId, connection: {} }) } as unknown as RegistryPort;
    // The song's content is already stored (outcome `existing`): no lyrics or fingerprint calls are needed.
    const catalogue = {
      mappedProviderIds: async () => new Set<string>(),
      resolve: async (req: { providerId: string }) => {
        resolved.push(req.providerId);
        return { itemId: `item-${req.providerId}`, outcome: 'existing' };
      },
      storeLearned: async () => undefined,
    } as unknown as CataloguePort;
    // The download streams the file to disk as the media-servers client does (a real write into the temp dir).
    const clients = (() => ({ downloadTrack: (_id: string, dest: string) => writeFile(dest, wav) })) as unknown as MediaClientFactory;
    const logger = createLogger({ service: 'test', level: 'error' });
    const spy = Object.assign(Object.create(logger) as typeof logger, {
      error: (msg: string, meta?: Record<string, unknown>) => {
        errors.push({ message: msg, meta: meta ?? {} });
        return spy;
      },
    });
    processor = new TrackProcessor(registry, catalogue, runs, clients, cpu, spy, mount);
    processor.claimWaitMs = 0;
  });
  afterAll(async () => {
    await cpu.close();
    await ds?.destroy();
    await db?.drop();
    unmountTmpfs(mount);
  });

  it('When the temp filesystem is full, then the track is retried (not excluded) with a clear error, and analysed once the space is back', async () => {
    if (!mount) return;
    await runs.enqueue(runId, serverId, ['f1']);
    const err = await processor.process(message('f1'), false).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TempDirectoryFullError);
    expect(isTransientFault(err)).toBe(true);
    expect((err as Error).message).toContain(mount);
    expect(errors.map((e) => [e.message, e.meta.dir, e.meta.code])).toEqual([['analysis temp directory full: the track is retried once space is freed', mount, 'ENOSPC']]);
    // Nothing lost or poisoned: the claim is handed back, nothing excluded, no temp files left behind.
    expect(await row('f1')).toEqual({ outcome: 'queued', claimed_by: null, error: null });
    expect(await exclusions()).toBe(0);
    expect(readdirSync(mount)).toEqual([]);

    execFileSync('mount', ['-o', 'remount,size=8m', mount]);
    const result = await processor.process(message('f1'), false);
    expect(result.outcome).toBe('mapped_existing');
    expect(resolved).toEqual(['f1']);
    expect((await row('f1'))?.outcome).toBe('mapped_existing');
    execFileSync('mount', ['-o', 'remount,size=256k', mount]);
  });

  it('When the temp filesystem is still full on the final attempt, then the track is recorded failed with that reason and not excluded (the next run retries it)', async () => {
    if (!mount) return;
    await runs.enqueue(runId, serverId, ['f2']);
    const result = await processor.process(message('f2'), true);
    expect(result.outcome).toBe('failed');
    const r = await row('f2');
    expect([r?.outcome, r?.error]).toEqual(['failed', expect.stringContaining(`analysis temp directory full: ${mount} (ENOSPC)`)]);
    expect(await exclusions()).toBe(0);
  });
});
