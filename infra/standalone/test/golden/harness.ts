import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import request from 'supertest';
import { compareGolden, formatDifferences } from './compare';
import { Normaliser } from './normalise';

/** One recorded call: what was asked (normalised), the HTTP status and the normalised body. */
export interface GoldenEntry {
  request: string;
  status: number;
  body: unknown;
}

/** Folder of the golden fixtures (`<family>.json`). */
export const GOLDEN_FIXTURES = join(__dirname, 'fixtures');

/**
 * Makes the golden calls against one running stack and records or compares them per family
 * (docs/architecture.md, "Golden answers"). Used by the golden suite (a fresh install) and by the upgrade
 * suite (an install restored from a previous release's data).
 *
 * `mode` 'record' writes `fixtures/<family>.json`; 'compare' fails listing every difference from it.
 * `freshDir`, when set, also receives this run's normalised answers (for inspection only).
 */
export class GoldenHarness {
  readonly norm = new Normaliser();
  /** `<server>:<file stem>` -> provider id; `song:<stem>` -> content id; `artist:<server>:<name>` -> provider artist id. */
  readonly ids = new Map<string, string>();
  /** Calls made so far in the current family, by label. */
  private family: Record<string, GoldenEntry> = {};

  constructor(
    private readonly url: () => string,
    private readonly auth: Record<string, string>,
    private readonly mode: 'record' | 'compare',
    private readonly freshDir?: string,
  ) {}

  /** The id behind `label`; throws when the run has no such label. */
  id = (label: string): string => {
    const v = this.ids.get(label);
    if (v === undefined) throw new Error(`golden: no id for ${label}`);
    return v;
  };

  /**
   * Registers every id of the stack with a stable label (see normalise.ts): servers by name, provider ids as
   * `<server>:<file stem>`, content ids as `song:<stem>`, provider artist ids as `artist:<server>:<name>`.
   */
  async labelIds(sql: <T = any>(text: string, params?: unknown[]) => Promise<T[]>): Promise<void> {
    const servers = (await request(this.url()).get('/api/servers').set(this.auth).expect(200)).body.servers as Array<{ id: string; name: string }>;
    for (const s of servers) this.norm.register(s.id, `server:${s.name}`);
    const name = new Map(servers.map((s) => [s.id, s.name]));
    const maps = await sql<{ server_id: string; provider_id: string; item_id: string; file_path: string }>(
      `SELECT server_id, provider_id, item_id, file_path FROM catalogue.track_server_map ORDER BY server_id, file_path`,
    );
    for (const m of maps) {
      const stem = basename(m.file_path, extname(m.file_path));
      const label = `${name.get(m.server_id)}:${stem}`;
      this.ids.set(label, m.provider_id);
      this.norm.register(m.provider_id, label);
      this.ids.set(`song:${stem}`, m.item_id);
      this.norm.register(m.item_id, `song:${stem}`);
    }
    const artists = await sql<{ server_id: string; provider_artist_id: string; artist_name: string }>(
      `SELECT server_id, provider_artist_id, artist_name FROM catalogue.artist_server_map ORDER BY server_id, artist_name`,
    );
    for (const a of artists) {
      const label = `artist:${name.get(a.server_id)}:${a.artist_name}`;
      this.ids.set(label, a.provider_artist_id);
      this.norm.register(a.provider_artist_id, label);
    }
  }

  /**
   * Makes one call through the gateway and keeps its normalised answer under `label`.
   * `path` is as sent (with real ids); `body` is sent as JSON for POST. `settleOrder`, when given, puts parts
   * of the answer whose order depends on timing (not on the contract) into a stable order before recording.
   */
  call = async (label: string, method: 'GET' | 'POST', path: string, body?: unknown, settleOrder?: (parsed: any) => void): Promise<request.Response> => {
    if (label in this.family) throw new Error(`golden: call label ${label} used twice`);
    const res = method === 'GET' ? await request(this.url()).get(path).set(this.auth) : await request(this.url()).post(path).set(this.auth).send((body ?? {}) as object);
    const parsed = res.type === 'application/json' ? structuredClone(res.body) : res.text;
    if (settleOrder && res.status === 200) settleOrder(parsed);
    this.family[label] = {
      request: `${this.norm.normaliseRequest(method, path)}${body === undefined ? '' : ` ${JSON.stringify(this.norm.normalise(body))}`}`,
      status: res.status,
      body: this.norm.normalise(parsed),
    };
    return res;
  };

  /** Ends a family: records it (mode 'record') or compares it with `fixtures/<name>.json` and throws on any difference. */
  settle(name: string): void {
    const file = join(GOLDEN_FIXTURES, `${name}.json`);
    const fresh = this.family;
    this.family = {};
    if (this.mode === 'record') {
      mkdirSync(GOLDEN_FIXTURES, { recursive: true });
      writeFileSync(file, `${JSON.stringify(fresh, null, 2)}\n`);
      return;
    }
    if (this.freshDir) {
      mkdirSync(this.freshDir, { recursive: true });
      writeFileSync(join(this.freshDir, `${name}.json`), `${JSON.stringify(fresh, null, 2)}\n`);
    }
    if (!existsSync(file)) throw new Error(`golden: no fixture ${file}; record with npm run golden:record and review the diff`);
    const recorded = JSON.parse(readFileSync(file, 'utf8')) as Record<string, GoldenEntry>;
    const diffs = compareGolden(recorded, fresh);
    if (diffs.length > 0) throw new Error(formatDifferences(`golden answers ${name} differ from fixtures/${name}.json (a deliberate change is re-recorded with npm run golden:record, then reviewed)`, diffs));
  }
}
