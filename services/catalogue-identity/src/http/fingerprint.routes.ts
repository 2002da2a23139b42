/**
 * Recording fingerprint storage of the catalogue (shapes: shared/contracts/src/recording.ts, internal routes):
 * - PUT /internal/tracks/:itemId/fingerprint `{codec, landmarks, seconds, blob (base64)}`: 204; 404 unknown song;
 *   400 for a blob that is not base64 of at most FINGERPRINT_MAX_BYTES or whose codec byte disagrees.
 * - GET /internal/tracks/:itemId/fingerprint: one song's fingerprint; 404 when it has none.
 * - GET /internal/fingerprints?after=&limit=: keyset page by item id (the index loads them per generation).
 * - POST /internal/fingerprints/missing `{serverId, providerIds}`: provider ids whose songs have no fingerprint
 *   (the analysis run's backfill pass).
 */
import { FINGERPRINT_MAX_BYTES, recordingInternalRoutes as routes } from '@polyphony/contracts';
import { NotFoundError, ValidationError, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { FingerprintRepository } from '../store/fingerprint.repository';

export function fingerprintRoutes(store: FingerprintRepository): RouteHandlers {
  const r = routeHandlers();
  r.json(routes.trackFingerprint, async ({ params: { itemId }, body }, _req, res) => {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(body.blob)) throw new ValidationError('blob must be base64');
    const blob = Buffer.from(body.blob, 'base64');
    if (blob.length === 0 || blob.length > FINGERPRINT_MAX_BYTES) throw new ValidationError(`blob must hold 1 to ${FINGERPRINT_MAX_BYTES} bytes`);
    if (blob[0] !== body.codec) throw new ValidationError(`blob starts with codec version ${blob[0]}, not ${body.codec}`);
    if (!(await store.put(itemId, { codec: body.codec, landmarks: body.landmarks, seconds: body.seconds, blob }))) throw new NotFoundError(`Track ${itemId} not found`);
    res.status(204).end();
  });
  r.json(routes.trackFingerprintGet, async ({ params: { itemId } }) => {
    const f = await store.get(itemId);
    if (!f) throw new NotFoundError(`Track ${itemId} has no fingerprint`);
    return f;
  });
  r.json(routes.fingerprintsPage, ({ query }) => store.page(query.after, query.limit));
  r.json(routes.fingerprintsMissing, ({ body }) => store.missing(body.serverId, body.providerIds));
  return r;
}
