import { FINGERPRINT_MAX_BYTES, type FingerprintMissingResponse, type FingerprintPage, type PutFingerprintRequest, type StoredFingerprint } from '@polyphony/contracts';
import { NotFoundError, ValidationError } from '@polyphony/platform';

/** Storage of songs' recording fingerprints (store/fingerprint.repository.ts). */
export interface FingerprintStore {
  /** false when the song does not exist */
  put(itemId: string, f: { codec: number; landmarks: number; seconds: number; blob: Buffer }): Promise<boolean>;
  get(itemId: string): Promise<StoredFingerprint | undefined>;
  page(after: string | undefined, limit: number): Promise<FingerprintPage>;
  missing(serverId: string, providerIds: string[], codec?: number): Promise<FingerprintMissingResponse>;
}

/**
 * Recording fingerprints of songs (search by recording, issue 33): the analysis worker stores them, the index
 * pages through them per generation, the analysis run asks which mapped songs still lack one (the backfill).
 */
export class FingerprintService {
  constructor(private readonly store: FingerprintStore) {}

  /**
   * Stores (replaces) a song's fingerprint.
   * @throws ValidationError (400) for a blob that is not base64 of 1..FINGERPRINT_MAX_BYTES bytes starting with its codec byte;
   *   NotFoundError (404) for an unknown song
   */
  async put(itemId: string, body: PutFingerprintRequest): Promise<void> {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(body.blob)) throw new ValidationError('blob must be base64');
    const blob = Buffer.from(body.blob, 'base64');
    if (blob.length === 0 || blob.length > FINGERPRINT_MAX_BYTES) throw new ValidationError(`blob must hold 1 to ${FINGERPRINT_MAX_BYTES} bytes`);
    if (blob[0] !== body.codec) throw new ValidationError(`blob starts with codec version ${blob[0]}, not ${body.codec}`);
    if (!(await this.store.put(itemId, { codec: body.codec, landmarks: body.landmarks, seconds: body.seconds, blob }))) throw new NotFoundError(`Track ${itemId} not found`);
  }

  /** @throws NotFoundError (404) when the song has no fingerprint */
  async get(itemId: string): Promise<StoredFingerprint> {
    const f = await this.store.get(itemId);
    if (!f) throw new NotFoundError(`Track ${itemId} has no fingerprint`);
    return f;
  }

  page(after: string | undefined, limit: number): Promise<FingerprintPage> {
    return this.store.page(after, limit);
  }

  /** Of the server's provider ids, those whose songs have no fingerprint, or one of another codec version than `codec` when given. */
  missing(serverId: string, providerIds: string[], codec?: number): Promise<FingerprintMissingResponse> {
    return this.store.missing(serverId, providerIds, codec);
  }
}
