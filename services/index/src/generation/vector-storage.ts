import { ProductQuantiser, type Quantiser } from '@polyphony/vector-engine';
import type { VectorStoreSettings } from '../config';
import type { StoredQuantiserRecord } from './ports';

/** Bytes of a generation's float copy kept in memory at most (`INDEX_VECTOR_RESIDENT_MIB`; absent = 0, disk only). */
export function residentBytesOf(v: VectorStoreSettings): number {
  return Math.floor((v.residentMiB ?? 0) * 1024 * 1024);
}

/**
 * Where a generation's display metadata and text-search columns live (`INDEX_TABLE_RESIDENT_MIB`, `INDEX_VECTOR_DIR`);
 * settings without a table budget (tests, benches) keep them in memory.
 */
export function tableStorageOf(v: VectorStoreSettings): { dir?: string; residentMaxBytes?: number } {
  return { ...(v.dir ? { dir: v.dir } : {}), ...(v.tableResidentMiB !== undefined ? { residentMaxBytes: Math.floor(v.tableResidentMiB * 1024 * 1024) } : {}) };
}


/** The stored form of a trained quantiser (`index.quantisers` row). */
export function storedQuantiser(q: Quantiser): StoredQuantiserRecord {
  return { mode: q.kind, pqM: q instanceof ProductQuantiser ? q.m : null, codeSize: q.codeSize, params: q.toParams() };
}
