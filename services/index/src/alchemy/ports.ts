/** An exclusion as stored: unit vector and radius (cosine distance; null = the caller's default). */
export interface StoredExclusion {
  vector: number[];
  distance: number | null;
}

export interface StoredAnchor {
  id: number;
  name: string;
  centroid: Float32Array;
  dim: number;
  exclusions: StoredExclusion[];
  items: Array<{ id: string; op: 'ADD' | 'SUBTRACT'; type: string }> | null;
  createdBy: string | null;
  createdAt: Date;
  /** Embedder version of the generation it was computed against; null when unknown (saved on an empty index). */
  embedderVersion: string | null;
}

export interface StoredRadio {
  id: number;
  anchorId: number;
  name: string;
  temperature: number;
  nResults: number;
  enabled: boolean;
  /** The polyphony user (gateway user id) who created it, whose linked account writes its playlists; null: the server's account. */
  createdByUserId: string | null;
}

/** Saved anchors and radios (`index.anchors`, `index.radios`; store: saved-alchemy.repository.ts). @throws ConflictError (409) on a taken name or a second radio of an anchor */
export interface SavedAlchemyStore {
  listAnchors(): Promise<StoredAnchor[]>;
  findAnchor(id: number): Promise<StoredAnchor | undefined>;
  findAnchorByName(name: string): Promise<StoredAnchor | undefined>;
  insertAnchor(a: Omit<StoredAnchor, 'id' | 'createdAt' | 'dim'>): Promise<StoredAnchor>;
  renameAnchor(id: number, name: string): Promise<StoredAnchor | undefined>;
  deleteAnchor(id: number): Promise<boolean>;
  listRadios(): Promise<StoredRadio[]>;
  findRadio(id: number): Promise<StoredRadio | undefined>;
  insertRadio(r: { anchorId: number; temperature: number; nResults: number; enabled: boolean; createdByUserId?: string | null }): Promise<StoredRadio>;
  updateRadio(id: number, patch: { temperature?: number; nResults?: number; enabled?: boolean }): Promise<StoredRadio | undefined>;
  deleteRadio(id: number): Promise<boolean>;
}
