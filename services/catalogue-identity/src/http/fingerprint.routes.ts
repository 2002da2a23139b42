/**
 * Recording fingerprint storage of the catalogue (shapes: shared/contracts/src/recording.ts, internal routes):
 * - PUT /internal/tracks/:itemId/fingerprint `{codec, landmarks, seconds, blob (base64)}`: 204; 404 unknown song;
 *   400 for a blob that is not base64 of at most FINGERPRINT_MAX_BYTES or whose codec byte disagrees.
 * - GET /internal/tracks/:itemId/fingerprint: one song's fingerprint; 404 when it has none.
 * - GET /internal/fingerprints?after=&limit=: keyset page by item id (the index loads them per generation).
 * - POST /internal/fingerprints/missing `{serverId, providerIds, codec?}`: provider ids whose songs have no fingerprint,
 *   or (with `codec`) one of another landmark codec version (the analysis run's backfill pass).
 */
import { recordingInternalRoutes as routes } from '@polyphony/contracts';
import { routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { FingerprintService } from '../domain/fingerprint.service';

export function fingerprintRoutes(fingerprints: FingerprintService): RouteHandlers {
  const r = routeHandlers();
  r.json(routes.trackFingerprint, async ({ params: { itemId }, body }, _req, res) => {
    await fingerprints.put(itemId, body);
    res.status(204).end();
  });
  r.json(routes.trackFingerprintGet, ({ params: { itemId } }) => fingerprints.get(itemId));
  r.json(routes.fingerprintsPage, ({ query }) => fingerprints.page(query.after, query.limit));
  r.json(routes.fingerprintsMissing, ({ body }) => fingerprints.missing(body.serverId, body.providerIds, body.codec));
  return r;
}
