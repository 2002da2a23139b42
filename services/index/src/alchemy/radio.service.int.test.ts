import { createTestDatabase, type TestDatabase } from '@polyphony/testkit';
import type { TaskUpdatedEvent } from '@polyphony/contracts';
import { TaskRunStore, createLogger, createServiceDataSource, createTaskRunTableSql, type Bus } from '@polyphony/platform';
import type { DataSource } from 'typeorm';
import type { IndexState } from '../core/generation';
import type { AlchemyService } from './alchemy.service';
import type { SavedAlchemyStore, StoredRadio } from './ports';
import { RadioService, type RadioPeers } from './radio.service';
import type { AnchorService } from './saved-alchemy.service';

/**
 * Radio runs on the platform task host (index.radio_runs over a real PostgreSQL): takeover from a replica
 * that stops mid-run, cancel while a playlist is being written, and a run that cannot read its servers.
 * Alchemy, the saved radios and the peers are stand-ins: what is under test is the run's lifecycle.
 */
describe('radio runs on the task host (PostgreSQL)', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let store: TaskRunStore;
  const logger = createLogger({ service: 'test', level: 'error' });
  const radios: StoredRadio[] = [
    // Calm was created by a signed-in user (households: written with that user's account), Loud by the API token.
    { id: 1, anchorId: 11, name: 'Calm', temperature: 0, nResults: 3, enabled: true, createdByUserId: 'user-7' },
    { id: 2, anchorId: 12, name: 'Loud', temperature: 0, nResults: 3, enabled: true, createdByUserId: null },
    { id: 3, anchorId: 13, name: 'Off', temperature: 0, nResults: 3, enabled: false, createdByUserId: null },
  ];
  const servers = [
    { id: 's1', name: 'Alpha' },
    { id: 's2', name: 'Beta' },
  ];
  const repo = { listRadios: async () => radios } as unknown as SavedAlchemyStore;
  // Alchemy's answer names the anchor, so each written playlist shows which radio it came from.
  const alchemy = { run: async (_scope: unknown, items: Array<{ id: string }>) => ({ results: [{ item_id: `near-${items[0]!.id}` }] }) } as unknown as AlchemyService;
  const state = { current: () => ({}) } as unknown as IndexState;

  /** Peers that record every playlist written; `holdAt` (1-based) makes that write wait until `release()`. */
  function peers(opts: { holdAt?: number; failList?: boolean } = {}) {
    const written: string[] = [];
    /** `<radio>@<server>` -> the user id the playlist was asked to be written for ('-' for none). */
    const owners = new Map<string, string>();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let reached!: () => void;
    const holding = new Promise<void>((r) => (reached = r));
    const p: RadioPeers = {
      async listServers() {
        if (opts.failList) throw new Error('registry unreachable');
        return servers;
      },
      async replaceRadio(serverId, name, ids, runId, userId) {
        written.push(`${name}@${serverId}:${ids.join(',')}`);
        owners.set(`${name}@${serverId}`, userId ?? '-');
        if (written.length === opts.holdAt) {
          reached();
          await held;
        }
        return { serverId, name, runId } as never;
      },
    };
    return { p, written, owners, release, holding };
  }

  const events: TaskUpdatedEvent[] = [];
  const bus = { publish: async (_key: string, e: unknown) => void events.push(e as TaskUpdatedEvent) } as unknown as Bus;
  const service = (name: string, p: RadioPeers) =>
    new RadioService(repo, {} as AnchorService, alchemy, state, { tracks: {} as never }, p, store, bus, logger.child({ replica: name }), { ttlMs: 60_000, scanMs: 50 });

  beforeAll(async () => {
    db = await createTestDatabase('radioruns');
    ds = createServiceDataSource({ url: db.url, schema: 'ix', migrations: [] });
    await ds.initialize();
    await ds.query('CREATE SCHEMA ix');
    for (const sql of createTaskRunTableSql('ix', 'radio_runs')) await ds.query(sql);
    store = new TaskRunStore(ds, 'ix', 'radio_runs', 'A radio run is already running');
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });
  beforeEach(async () => {
    events.length = 0;
    await ds.query('DELETE FROM ix.radio_runs');
  });

  it('When the coordinating replica stops mid-run, then another replica resumes it, skips the playlists already written and ends SUCCESS', async () => {
    const a = peers({ holdAt: 2 });
    const b = peers();
    const first = service('a', a.p);
    const second = service('b', b.p);
    const run = await first.start();
    await a.holding;
    const stopping = first.host.stop();
    a.release();
    await stopping;
    second.host.startScanning();
    const end = await second.waitFor(run.id, 10_000);
    await second.host.stop();
    expect(end).toMatchObject({ state: 'SUCCESS', leaseGeneration: 2, message: 'Created 4 radio playlist(s) for 2 enabled radio(s) on 2 server(s)' });
    // Replica a wrote the first two pairs (the second finished while it stopped); b wrote only the other two.
    expect(a.written).toEqual(['Calm@s1:near-11', 'Loud@s1:near-12']);
    expect(b.written).toEqual(['Calm@s2:near-11', 'Loud@s2:near-12']);
    expect(RadioService.summary(end!)).toMatchObject({ playlists_created: 4, radios_enabled: 2, servers_enabled: 2, failed: [], status: 'SUCCESS' });
    expect(end!.log.some((l) => l.includes('resumed by'))).toBe(true);
    // Households: the creator's user id goes with each playlist of a user's radio, by both replicas; none for the token's radio.
    expect([...a.owners, ...b.owners].sort()).toEqual([
      ['Calm@s1', 'user-7'],
      ['Calm@s2', 'user-7'],
      ['Loud@s1', '-'],
      ['Loud@s2', '-'],
    ]);
  });

  it('When a run is cancelled while a playlist is being written, then it ends REVOKED at once, writes nothing more and a new run may start', async () => {
    const a = peers({ holdAt: 2 });
    const radio = service('a', a.p);
    const run = await radio.start();
    await a.holding;
    expect(await radio.cancel(run.id)).toBe(true);
    expect((await store.find(run.id))?.state).toBe('REVOKED');
    a.release();
    await radio.host.idle();
    const end = await store.find(run.id);
    // The pair in flight finished on the media server, but the run's row no longer takes writes (fenced).
    expect(end).toMatchObject({ state: 'REVOKED', details: { done: ['1@s1'], created: 1 } });
    expect(a.written).toHaveLength(2);
    expect(events.at(-1)).toMatchObject({ taskId: run.id, type: 'radios', owner: 'index', state: 'REVOKED' });
    expect(await radio.cancel(run.id)).toBe(false);
    await expect(radio.start()).resolves.toMatchObject({ state: 'NEW' });
    await radio.host.stop();
  });

  it('When the servers cannot be read, then the run ends FAIL with the reason and writes nothing', async () => {
    const a = peers({ failList: true });
    const radio = service('a', a.p);
    const run = await radio.start();
    await radio.host.idle();
    expect(await store.find(run.id)).toMatchObject({ state: 'FAIL', message: 'Radio run failed: registry unreachable', progress: 100 });
    expect(a.written).toEqual([]);
    expect(events.map((e) => e.state)).toEqual(['NEW', 'FAIL']);
  });
});
