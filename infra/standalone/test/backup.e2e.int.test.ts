import request from 'supertest';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSupysonic, WESNOTH_MUSIC_DIR, type StartedSupysonic, type TestDatabase } from '@polyphony/testkit';
import type { Stack } from '../src/stack';
import { API_TOKEN, startTestStack, takeBackup } from './helpers';

/**
 * A broken disk must not cost a re-analysis: real music (8 Wesnoth tracks served by supysonic) is
 * analyzed on install A, backed up with a passphrase, downloaded, and restored by upload onto a
 * fresh install B. B then has the same songs, mappings and server (secret included), answers
 * similar songs identically for every track, and reaches the media server with the restored secret.
 */
describe('backup and restore onto a fresh install (real analysis)', () => {
  jest.setTimeout(15 * 60_000);
  const auth = { Authorization: `Bearer ${API_TOKEN}` };
  let supysonic: StartedSupysonic;
  let musicDir: string;
  const installs: Array<{ stack: Stack; db: TestDatabase; url: string }> = [];

  beforeAll(async () => {
    musicDir = await mkdtemp(join(tmpdir(), 'polyphony-backup-music-'));
    const files = (await readdir(WESNOTH_MUSIC_DIR)).filter((f) => f.endsWith('.ogg')).sort().slice(0, 8);
    for (const f of files) await copyFile(join(WESNOTH_MUSIC_DIR, f), join(musicDir, f));
    supysonic = await startSupysonic({ musicDir, user: 'alice', password: 'alice-secret-pass' });
    for (const name of ['a', 'b']) installs.push(await startTestStack({ BACKUP_DIR: join(musicDir, `backups-${name}`) }));
  });
  afterAll(async () => {
    for (const i of installs) {
      await i.stack.stop();
      await i.db.drop();
    }
    await supysonic?.close();
    await rm(musicDir, { recursive: true, force: true });
  });

  async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 10 * 60_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = await probe();
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  /** Similar songs for every mapped provider id, once the index answers for all of them. */
  async function similarAll(url: string, ids: string[]): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    for (const id of ids) {
      const res = await until(`similar songs for ${id}`, async () => {
        const r = await request(url).get(`/api/similar_tracks?item_id=${encodeURIComponent(id)}&n=5`).set(auth);
        return r.status === 200 ? r : undefined;
      }, 120_000);
      out[id] = res.body;
    }
    return out;
  }

  it('When install A is backed up and restored onto a fresh install B, then songs, mappings, servers and similar songs are identical', async () => {
    const [a, b] = installs as [(typeof installs)[0], (typeof installs)[0]];
    await request(a.url).post('/api/servers').set(auth).send({ name: 'Supysonic', server_type: 'navidrome', creds: { url: supysonic.url, user: 'alice', password: 'alice-secret-pass' } }).expect(201);
    const run = await request(a.url).post('/api/analysis/start').set(auth).send({}).expect(202);
    const status = await until('analysis', async () => {
      const s = await request(a.url).get(`/api/status/${run.body.task_id}`).set(auth);
      return ['SUCCESS', 'FAIL', 'REVOKED'].includes(s.body.state) ? s.body : undefined;
    });
    expect(status.state).toBe('SUCCESS');
    const mappingsSql = `SELECT m.provider_id, m.item_id, s.title, s.embedder_version FROM catalogue.track_server_map m JOIN catalogue.score s USING (item_id) ORDER BY m.provider_id`;
    const mappingsA = await a.db.query(mappingsSql);
    expect(mappingsA).toHaveLength(8);
    const ids = mappingsA.map((m: { provider_id: string }) => m.provider_id);
    const similarA = await similarAll(a.url, ids);

    const { archive } = await takeBackup(a.url, auth, { passphrase: 'correct horse battery staple' });

    // B is a fresh install: nothing analyzed, no server.
    expect(await b.db.query(`SELECT * FROM catalogue.score`)).toEqual([]);
    const restored = await request(b.url).post('/api/backup/restore').set(auth).set('content-type', 'application/gzip').set('x-backup-passphrase', 'correct horse battery staple').send(archive).expect(200);
    expect(restored.body.restored.rows).toBeGreaterThan(8);
    expect(await b.db.query(mappingsSql)).toEqual(mappingsA);
    const embeddings = `SELECT item_id, encode(vector, 'hex') AS v FROM catalogue.embedding ORDER BY item_id`;
    expect(await b.db.query(embeddings)).toEqual(await a.db.query(embeddings));
    const servers = `SELECT id, name, server_type, creds, is_default FROM registry.music_servers ORDER BY id`;
    expect(await b.db.query(servers)).toEqual(await a.db.query(servers));
    expect(await similarAll(b.url, ids)).toEqual(similarA);
    // The restored secret works: B reaches supysonic with the stored password.
    const [server] = await b.db.query(`SELECT id FROM registry.music_servers`);
    const test = await request(b.url).post('/api/servers/test').set(auth).send({ server_type: 'navidrome', server_id: server.id, creds: { url: supysonic.url, user: 'alice', password: '' } }).expect(200);
    expect(test.body.ok).toBe(true);
    // A second analysis on B finds every track already mapped: nothing is re-analyzed.
    const rerun = await request(b.url).post('/api/analysis/start').set(auth).send({}).expect(202);
    const again = await until('re-analysis', async () => {
      const s = await request(b.url).get(`/api/status/${rerun.body.task_id}`).set(auth);
      return ['SUCCESS', 'FAIL', 'REVOKED'].includes(s.body.state) ? s.body : undefined;
    });
    expect(again.state).toBe('SUCCESS');
    expect((again.details as { servers: Array<{ analyzed: number; skippedMapped: number }> }).servers[0]).toMatchObject({ analyzed: 0 });
  });
});
