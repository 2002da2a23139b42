import { defineRoute } from './openapi';
import { z } from './zod';

/**
 * Import from the reference implementation (AudioMuse-AI), issue 34: `POST /api/import/audiomuse` starts a
 * task (type `import`, owner catalogue) that reads the reference's PostgreSQL database (a connection string,
 * opened read-only) or an uploaded `pg_dump` file (plain SQL or custom format), and `GET .../status` reports
 * the last import. Admin only.
 */

/**
 * Embedder version of the reference's MusiCNN vectors as polyphony serves them after an import: the MSD network's
 * `model/dense/BiasAdd` (200-d, before its ReLU), mean over every non-overlapping 3 s patch of a `center=False` mel of
 * the first 600 s. The analysis worker computes the same vector (analysis-worker musicnn/reference-vector.ts).
 */
export const REFERENCE_EMBEDDER_VERSION = 'audiomuse:musicnn-msd-200';

/**
 * The message of identity's 409 `embedder_version_mismatch` (a resolve without a vector of the served version). It
 * names the served version in a fixed form that {@link servedVersionOfMismatch} reads back: the analysis worker adds
 * the reference's vector and resolves again when the catalogue serves {@link REFERENCE_EMBEDDER_VERSION} (the
 * switch after an import), so new files are analysed and served during that switch.
 */
export function embedderMismatchMessage(servedVersion: string, requestVersions: readonly string[]): string {
  return `the catalogue serves ${servedVersion} vectors and this request has none (versions ${requestVersions.join(', ')}); analyse with the same embedder as the catalogue or re-analyse the catalogue`;
}

/** The served version named by an {@link embedderMismatchMessage}; undefined for any other text. */
export function servedVersionOfMismatch(message: string): string | undefined {
  return /^the catalogue serves (\S+) vectors and this request has none/.exec(message)?.[1];
}

/** JSON body of a start with a connection string. */
export const ImportStartBody = z.object({
  /** `postgres://user:pass@host:port/db` of the reference's database; opened in read-only transactions only. */
  connection_string: z.string().min(1).max(2000),
  /** Report what would be imported without writing anything. */
  dry_run: z.boolean().optional(),
});
export type ImportStartBody = z.infer<typeof ImportStartBody>;

/** Query of a start with an uploaded dump (the body is the file). */
export const ImportUploadQuery = z.object({
  dry_run: z.enum(['true', 'false', '1', '0']).optional(),
});

/** Counts of one reference table: rows read, imported (new or updated), already present, skipped. */
export const ImportTableCount = z.object({ read: z.number().int(), imported: z.number().int(), existing: z.number().int(), skipped: z.number().int() });
export type ImportTableCount = z.infer<typeof ImportTableCount>;

/**
 * Agreement of the imported vectors with polyphony's own computation of the same layer (issue 34): for a sample of
 * imported songs whose files are reachable, the analysis worker downloads the file and computes the reference's
 * vector (POST /internal/analysis/reference-vector); the cosine of the two is reported per song.
 */
export const VectorAgreement = z.object({
  /** `measured`: at least one song compared; `unavailable`: no song could be compared (`reason` says why). */
  status: z.enum(['measured', 'unavailable']),
  reason: z.string().optional(),
  /** Songs asked for (spread over the imported songs by content id). */
  sampled: z.number().int(),
  /** A cosine at or above this counts as agreeing (0.98: float vs the numpy oracle is 1.0000000; int8 convolutions and another resampler cost less than 0.02). */
  threshold: z.number(),
  /** Per compared song (the reference's item id, the polyphony server and provider id of the file read): cosine of the imported vector and polyphony's, and the 3 s patches averaged. */
  songs: z.array(z.object({ ref_item_id: z.string(), server_id: z.string(), provider_id: z.string(), cosine: z.number(), patches: z.number().int() })),
  /** Songs that could not be compared, with the reason (download, decode, no reachable file). */
  failed: z.array(z.object({ ref_item_id: z.string(), reason: z.string() })),
  agreeing: z.number().int(),
  min_cosine: z.number().nullable(),
  median_cosine: z.number().nullable(),
  /** How the worker ran the network (`float` or `int8` timbral convolutions). */
  precision: z.string().optional(),
});
export type VectorAgreement = z.infer<typeof VectorAgreement>;

/** POST /internal/analysis/reference-vector: the reference's MusiCNN vector of one file, computed by the analysis worker. */
export const ReferenceVectorRequest = z.object({ serverId: z.string().min(1).max(200), providerId: z.string().min(1).max(500) });
export type ReferenceVectorRequest = z.infer<typeof ReferenceVectorRequest>;
export const ReferenceVectorResponse = z.object({
  /** `model/dense/BiasAdd` of the MSD network, mean over the patches (200 numbers). */
  vector: z.array(z.number()).length(200),
  /** Complete 3 s patches averaged (0: shorter than one patch, tiled). */
  patches: z.number().int(),
  precision: z.string(),
});
export type ReferenceVectorResponse = z.infer<typeof ReferenceVectorResponse>;

/** The report of an import (the task's `details.report`). */
export const ImportReport = z.object({
  /** `multi-server` (v3.x: music_servers, track_server_map) or `single-server` (provider ids as item_id, app_config). */
  layout: z.enum(['multi-server', 'single-server']),
  dry_run: z.boolean(),
  /** The embedder version the imported vectors are served under. */
  embedder_version: z.string(),
  /** Per reference table. */
  tables: z.record(z.string(), ImportTableCount),
  /** Skipped rows, grouped by table and reason (count and up to 5 example keys). */
  skipped: z.array(z.object({ table: z.string(), reason: z.string(), count: z.number().int(), examples: z.array(z.string()) })),
  /** Reference server id -> polyphony server id. */
  servers: z.record(z.string(), z.string()),
  /** Wall time of reading and writing, ms. */
  elapsed_ms: z.number(),
  /** Real imports only (a dry run writes no server polyphony could download from). */
  vector_agreement: VectorAgreement.optional(),
});
export type ImportReport = z.infer<typeof ImportReport>;

/** GET /api/import/audiomuse/status: the last import task (null when none ran). */
export const ImportStatus = z.object({
  task_id: z.string().nullable(),
  state: z.string().nullable(),
  message: z.string().nullable(),
  progress: z.number().nullable(),
  report: ImportReport.nullable(),
});
export type ImportStatus = z.infer<typeof ImportStatus>;

const tags = ['import'];
export const importRoutes = {
  audiomuseStart: defineRoute({
    method: 'post',
    path: '/api/import/audiomuse',
    summary:
      'Import from the reference (AudioMuse-AI): JSON `{connection_string, dry_run?}`, or a `pg_dump` file (plain SQL or custom format) as an application/octet-stream body with `?dry_run=true|false`. 202 `{task_id}`; 409 while an import runs; 400 for an unreadable source',
    tags,
    access: 'admin',
    service: 'catalogue',
    uploadTypes: ['application/octet-stream', 'application/sql', 'application/x-sql'],
    query: ImportUploadQuery,
    bodyLimit: 8 * 1024,
    status: 202,
  }),
  audiomuseStatus: defineRoute({ method: 'get', path: '/api/import/audiomuse/status', summary: 'The last import from the reference: state, progress and report', tags, access: 'admin', service: 'catalogue', response: ImportStatus }),
};
