/**
 * Saved anchors and radios in the index schema (`index.anchors`, `index.radios`; migration
 * 1732900000000-AddSavedAlchemy). Every method is one SQL statement.
 */
import type { DataSource } from 'typeorm';
import { mapUniqueViolation, queryRows } from '@polyphony/platform';
import type { SavedAlchemyStore, StoredAnchor, StoredExclusion, StoredRadio } from './ports';

export type { StoredAnchor, StoredExclusion, StoredRadio } from './ports';


interface AnchorRow {
  id: number;
  name: string;
  centroid: number[];
  dim: number;
  exclusions: StoredExclusion[];
  items: StoredAnchor['items'];
  created_by: string | null;
  created_at: Date;
  embedder_version: string | null;
}
const toAnchor = (r: AnchorRow): StoredAnchor => ({
  id: r.id,
  name: r.name,
  centroid: Float32Array.from(r.centroid),
  dim: r.dim,
  exclusions: r.exclusions ?? [],
  items: r.items,
  createdBy: r.created_by,
  createdAt: r.created_at,
  embedderVersion: r.embedder_version ?? null,
});

interface RadioRow {
  id: number;
  anchor_id: number;
  name: string;
  temperature: number;
  n_results: number;
  enabled: boolean;
  created_by_user_id: string | null;
}
const toRadio = (r: RadioRow): StoredRadio => ({
  id: r.id,
  anchorId: r.anchor_id,
  name: r.name,
  temperature: r.temperature,
  nResults: r.n_results,
  enabled: r.enabled,
  createdByUserId: r.created_by_user_id ?? null,
});

const RADIO_SELECT = `SELECT r.id, r.anchor_id, a.name, r.temperature, r.n_results, r.enabled, r.created_by_user_id FROM "index".radios r JOIN "index".anchors a ON a.id = r.anchor_id`;

export class SavedAlchemyRepository implements SavedAlchemyStore {
  constructor(private readonly ds: DataSource) {}

  /** Every anchor, newest first (vectors included: the list is small, at most a few hundred). */
  async listAnchors(): Promise<StoredAnchor[]> {
    const rows: AnchorRow[] = await this.ds.query(`SELECT * FROM "index".anchors ORDER BY created_at DESC, id DESC`);
    return rows.map(toAnchor);
  }

  async findAnchor(id: number): Promise<StoredAnchor | undefined> {
    const rows: AnchorRow[] = await this.ds.query(`SELECT * FROM "index".anchors WHERE id = $1`, [id]);
    return rows[0] && toAnchor(rows[0]);
  }

  /** By name, case-insensitively. */
  async findAnchorByName(name: string): Promise<StoredAnchor | undefined> {
    const rows: AnchorRow[] = await this.ds.query(`SELECT * FROM "index".anchors WHERE lower(name) = lower($1)`, [name]);
    return rows[0] && toAnchor(rows[0]);
  }

  /** @throws ConflictError (409 duplicate) when the name is taken (case-insensitively) */
  async insertAnchor(a: Omit<StoredAnchor, 'id' | 'createdAt' | 'dim'>): Promise<StoredAnchor> {
    try {
      const rows: AnchorRow[] = await this.ds.query(
        `INSERT INTO "index".anchors (name, centroid, dim, exclusions, items, created_by, embedder_version) VALUES ($1, $2::real[], $3, $4::jsonb, $5::jsonb, $6, $7) RETURNING *`,
        [a.name, Array.from(a.centroid), a.centroid.length, JSON.stringify(a.exclusions), a.items ? JSON.stringify(a.items) : null, a.createdBy, a.embedderVersion],
      );
      return toAnchor(rows[0]!);
    } catch (err) {
      mapUniqueViolation(err, `An anchor named "${a.name}" exists`);
    }
  }

  /** @throws ConflictError (409) when the name is taken */
  async renameAnchor(id: number, name: string): Promise<StoredAnchor | undefined> {
    try {
      const rows = await queryRows<AnchorRow>(this.ds, `UPDATE "index".anchors SET name = $2, updated_at = now() WHERE id = $1 RETURNING *`, [id, name]);
      return rows[0] && toAnchor(rows[0]);
    } catch (err) {
      mapUniqueViolation(err, `An anchor named "${name}" exists`);
    }
  }

  /** Deletes the anchor and its radio (cascade). */
  async deleteAnchor(id: number): Promise<boolean> {
    return (await queryRows(this.ds, `DELETE FROM "index".anchors WHERE id = $1 RETURNING id`, [id])).length > 0;
  }

  async listRadios(): Promise<StoredRadio[]> {
    const rows: RadioRow[] = await this.ds.query(`${RADIO_SELECT} ORDER BY r.created_at, r.id`);
    return rows.map(toRadio);
  }

  async findRadio(id: number): Promise<StoredRadio | undefined> {
    const rows: RadioRow[] = await this.ds.query(`${RADIO_SELECT} WHERE r.id = $1`, [id]);
    return rows[0] && toRadio(rows[0]);
  }

  /** @throws ConflictError (409) when the anchor already has a radio */
  async insertRadio(r: { anchorId: number; temperature: number; nResults: number; enabled: boolean; createdByUserId?: string | null }): Promise<StoredRadio> {
    try {
      const rows: Array<{ id: number }> = await this.ds.query(
        `INSERT INTO "index".radios (anchor_id, temperature, n_results, enabled, created_by_user_id) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
        [r.anchorId, r.temperature, r.nResults, r.enabled, r.createdByUserId ?? null],
      );
      return (await this.findRadio(rows[0]!.id))!;
    } catch (err) {
      mapUniqueViolation(err, `Anchor ${r.anchorId} already has a radio`);
    }
  }

  async updateRadio(id: number, patch: { temperature?: number; nResults?: number; enabled?: boolean }): Promise<StoredRadio | undefined> {
    const rows = await queryRows<{ id: number }>(
      this.ds,
      `UPDATE "index".radios SET temperature = COALESCE($2, temperature), n_results = COALESCE($3, n_results), enabled = COALESCE($4, enabled), updated_at = now()
        WHERE id = $1 RETURNING id`,
      [id, patch.temperature ?? null, patch.nResults ?? null, patch.enabled ?? null],
    );
    return rows[0] ? this.findRadio(id) : undefined;
  }

  async deleteRadio(id: number): Promise<boolean> {
    return (await queryRows(this.ds, `DELETE FROM "index".radios WHERE id = $1 RETURNING id`, [id])).length > 0;
  }
}
