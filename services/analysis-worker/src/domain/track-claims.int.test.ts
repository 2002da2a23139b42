/**
 * Per-track claims on real PostgreSQL (the fault suite's broker restart: the broker redelivers a
 * message whose first attempt is still working). A second attempt at a claimed track does no work and
 * fails transiently (the bus retries it); it finds the outcome once the first attempt records it, or
 * takes the track at once when the first attempt gave it back, or when the holder's lease lapsed.
 */
import type { AnalysisTrackRequested } from '@polyphony/contracts';
import { createLogger, isTransientFault } from '@polyphony/platform';
import { createTestDatabase, migratedDataSource, type TestDatabase } from '@polyphony/testkit';
import type { DataSource } from 'typeorm';
import { analysisMigrations } from '../store/migrations';
import { RunRepository } from '../store/run.repository';
import { AnalysisThreadPool } from './audio/cpu-pool';
import type { CataloguePort, MediaClientFactory, RegistryPort } from './ports';
import { TrackBusyError, TrackProcessor } from './track-processor';

/** A download that waits until the test lets it end (with an error, so no audio pipeline is needed). */
class HeldDownload {
  calls = 0;
  private waiting: Array<(err: Error) => void> = [];
  download = (): Promise<void> => {
    this.calls++;
    return new Promise((_resolve, reject) => this.waiting.push(reject));
  };
  async started(n: number): Promise<void> {
    const until = Date.now() + 5000;
    while (this.waiting.length < n && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    expect(this.waiting.length).toBeGreaterThanOrEqual(n);
  }
  end(err: Error): void {
    for (const reject of this.waiting.splice(0)) reject(err);
  }
}

describe('track claims (PostgreSQL)', () => {
  const cpu = new AnalysisThreadPool(1);
  let db: TestDatabase;
  let ds: DataSource;
  let runs: RunRepository;
  let held: HeldDownload;
  let processor: TrackProcessor;
  let runId: string;
  const serverId = 'srv-1';
  const message = (id: string): AnalysisTrackRequested => ({ taskId: runId, serverId, track: { id, title: `t ${id}`, artist: 'a' } });
  const outcome = async (id: string) =>
    (await db.query<{ outcome: string; claimed_by: string | null }>(`SELECT outcome, claimed_by FROM analysis.run_tracks WHERE run_id = $1 AND provider_id = $2`, [runId, id]))[0];

  beforeAll(async () => {
    db = await createTestDatabase('analysis_claims');
    ds = await migratedDataSource(db, 'analysis', analysisMigrations);
    runs = new RunRepository(ds);
    runId = (await runs.tasks.create('coordinator', 600_000)).run.id;
  });
  afterAll(async () => {
    await cpu.close();
    await ds?.destroy();
    await db?.drop();
  });
  beforeEach(() => {
    held = new HeldDownload();
    const registry = { getServer: async () => ({ id: serverId, connection: {} }) } as unknown as RegistryPort;
    const catalogue = { mappedProviderIds: async () => new Set<string>() } as unknown as CataloguePort;
    const clients = (() => ({ downloadTrack: held.download })) as unknown as MediaClientFactory;
    processor = new TrackProcessor(registry, catalogue, runs, clients, cpu, createLogger({ service: 'test', level: 'error' }));
    processor.claimWaitMs = 0;
  });

  it('When a second delivery arrives while the first attempt works, then it does no work and fails transiently, and after the outcome it is a duplicate', async () => {
    await runs.enqueue(runId, serverId, ['p1']);
    const first = processor.process(message('p1'), false);
    await held.started(1);
    const second = await processor.process(message('p1'), false).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(TrackBusyError);
    expect(isTransientFault(second)).toBe(true);
    expect(held.calls).toBe(1);
    // The first attempt ends (a permanent download failure is recorded as the track's outcome).
    held.end(new Error('file not found'));
    expect((await first).outcome).toBe('failed');
    expect(await processor.process(message('p1'), false)).toEqual({ outcome: 'failed', duplicate: true });
    expect(held.calls).toBe(1);
    expect((await outcome('p1'))?.outcome).toBe('failed');
  });

  it('When the first attempt fails transiently, then it gives the claim back and the retry starts at once', async () => {
    await runs.enqueue(runId, serverId, ['p2']);
    const first = processor.process(message('p2'), false).catch((e: unknown) => e);
    await held.started(1);
    expect((await outcome('p2'))?.claimed_by).not.toBeNull();
    held.end(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    expect(isTransientFault(await first)).toBe(true);
    expect(await outcome('p2')).toEqual({ outcome: 'queued', claimed_by: null });
    const retry = processor.process(message('p2'), false);
    await held.started(1);
    expect(held.calls).toBe(2);
    held.end(new Error('file not found'));
    expect((await retry).outcome).toBe('failed');
  });

  it('When the holder of a claim died (no renewal), then the claim lapses with its lease and the next delivery takes the track', async () => {
    await runs.enqueue(runId, serverId, ['p3']);
    expect(await runs.claimTrack(runId, serverId, 'p3', 'killed-worker', 1)).toEqual({ state: 'claimed' });
    await expect(processor.process(message('p3'), false)).rejects.toBeInstanceOf(TrackBusyError);
    expect(held.calls).toBe(0);
    await new Promise((r) => setTimeout(r, 1200));
    const taken = processor.process(message('p3'), false);
    await held.started(1);
    held.end(new Error('file not found'));
    expect((await taken).outcome).toBe('failed');
    // The dead holder cannot renew or release what it no longer holds.
    expect(await runs.renewClaim(runId, serverId, 'p3', 'killed-worker', 20)).toBe(false);
  });

  it('When a delivery may wait in place, then it ends as a duplicate as soon as the holder records the outcome, or takes the track when a dead holder\'s lease lapses', async () => {
    processor.claimWaitMs = 10_000;
    await runs.enqueue(runId, serverId, ['p7', 'p8']);
    const first = processor.process(message('p7'), false);
    await held.started(1);
    const second = processor.process(message('p7'), false);
    await new Promise((r) => setTimeout(r, 300));
    expect(held.calls).toBe(1);
    held.end(new Error('file not found'));
    expect((await first).outcome).toBe('failed');
    expect(await second).toEqual({ outcome: 'failed', duplicate: true });
    expect(held.calls).toBe(1);
    // A dead holder (claimed, never renewed, 2 s lease): the waiting delivery takes it once the lease lapsed, within its wait.
    expect(await runs.claimTrack(runId, serverId, 'p8', 'killed-worker', 2)).toEqual({ state: 'claimed' });
    const t0 = Date.now();
    const taken = processor.process(message('p8'), false);
    await held.started(1);
    const waited = Date.now() - t0;
    // Not before the lease lapsed (taking it within the wait is shown by the download starting at all).
    expect(waited).toBeGreaterThanOrEqual(1500);
    held.end(new Error('file not found'));
    expect((await taken).outcome).toBe('failed');
  });

  it('When an attempt works longer than its lease, then its renewals keep the claim and a redelivery stays out', async () => {
    await runs.enqueue(runId, serverId, ['p4']);
    processor.claimLeaseSeconds = 1;
    const first = processor.process(message('p4'), false);
    await held.started(1);
    await new Promise((r) => setTimeout(r, 2200));
    await expect(processor.process(message('p4'), false)).rejects.toBeInstanceOf(TrackBusyError);
    expect(held.calls).toBe(1);
    held.end(new Error('file not found'));
    expect((await first).outcome).toBe('failed');
  });

  it('When many deliveries of one track race for the claim, then exactly one wins', async () => {
    await runs.enqueue(runId, serverId, ['p5']);
    const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => runs.claimTrack(runId, serverId, 'p5', `attempt-${i}`, 20)));
    expect(claims.filter((c) => c.state === 'claimed')).toHaveLength(1);
    expect(claims.filter((c) => c.state === 'busy')).toHaveLength(7);
  });

  it('When a message has no run row (published before run rows existed), then it is processed without a claim', async () => {
    expect(await runs.claimTrack(runId, serverId, 'p6', 'x', 20)).toEqual({ state: 'absent' });
    const work = processor.process(message('p6'), false);
    await held.started(1);
    held.end(new Error('file not found'));
    expect((await work).outcome).toBe('failed');
  });
});
