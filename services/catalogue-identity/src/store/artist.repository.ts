/**
 * artist_server_map reads: provider artist id <-> artist name per server (spec "Resources": artist
 * mapping). Rows are written by identity resolution (metadata.artistId) and by the sweep.
 */
import type { DataSource } from 'typeorm';
import { normaliseArtistName } from '../domain/names';
import type { ArtistStore } from '../domain/ports';

/** Persistence of the artist mapping. */
export class ArtistRepository implements ArtistStore {
  constructor(private readonly ds: DataSource) {}

  /**
   * Resolves `value`, a provider artist id of the server or an artist name:
   * 1. a provider artist id of the server -> its stored name and that id;
   * 2. else a name whose normalised form is known on the server -> the stored name and its provider
   *    id (the smallest, byte order, when several ids carry the name);
   * 3. else `value` as the name and no provider id (pass-through, never an error).
   */
  async resolve(serverId: string, value: string): Promise<{ artistName: string; providerArtistId: string | null }> {
    const rows: Array<{ artist_name: string; provider_artist_id: string; exact: boolean }> = await this.ds.query(
      `(SELECT artist_name, provider_artist_id, true AS exact FROM catalogue.artist_server_map WHERE server_id = $1 AND provider_artist_id = $2)
       UNION ALL
       (SELECT artist_name, provider_artist_id, false FROM catalogue.artist_server_map WHERE server_id = $1 AND artist_norm = $3
         ORDER BY provider_artist_id COLLATE "C" LIMIT 1)`,
      [serverId, value, normaliseArtistName(value)],
    );
    const hit = rows.find((r) => r.exact) ?? rows[0];
    return hit ? { artistName: hit.artist_name, providerArtistId: hit.provider_artist_id } : { artistName: value, providerArtistId: null };
  }

  /**
   * Artist names -> the server's provider artist id (smallest when several); names unknown on the server
   * are absent. Matching is by normalised name.
   */
  async mapNames(serverId: string, names: readonly string[]): Promise<Record<string, string>> {
    if (names.length === 0) return {};
    const norms = names.map(normaliseArtistName);
    const rows: Array<{ artist_norm: string; provider_artist_id: string }> = await this.ds.query(
      `SELECT artist_norm, min(provider_artist_id COLLATE "C") AS provider_artist_id FROM catalogue.artist_server_map
        WHERE server_id = $1 AND artist_norm = ANY($2::text[]) GROUP BY artist_norm`,
      [serverId, [...new Set(norms)]],
    );
    const byNorm = new Map(rows.map((r) => [r.artist_norm, r.provider_artist_id]));
    const out: Record<string, string> = {};
    names.forEach((name, i) => {
      const id = byNorm.get(norms[i] as string);
      if (id !== undefined) out[name] = id;
    });
    return out;
  }
}
