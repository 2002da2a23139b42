import type { ServiceName } from '../config';

/**
 * Which service owns a path. First match wins; anything under /api, /external or /chat that matches
 * nothing is a 404 at the gateway.
 */
export const ROUTES: Array<{ pattern: RegExp; service: ServiceName }> = [
  { pattern: /^\/api\/(servers|config|version|setup\/servers|plex|dashboard|tasks|status|cancel|cancel_all|active_tasks|last_task|cron|backup)(\/|$)/, service: 'registry' },
  { pattern: /^\/chat\/api\/config_defaults$/, service: 'registry' },
  // Feature probes answered from the catalogue's counts (songs with learned tags, with lyrics).
  { pattern: /^\/api\/((clap|lyrics|sem_grove)\/stats|models)$/, service: 'catalogue' },
  { pattern: /^\/api\/(catalogue|cleaning|mappings|lyrics)(\/|$)/, service: 'catalogue' },
  { pattern: /^\/api\/analysis(\/|$)/, service: 'analysis' },
  { pattern: /^\/api\/(create_playlist|playlists|clustering|instant_playlist)(\/|$)/, service: 'playlist' },
  { pattern: /^\/api\/(similar_tracks|find_path|alchemy|similar_artists|sonic_fingerprint|search_tracks|search_artists|search_playlists|map|map_cache_status|rebuild_map_cache|sync|index|track|artists|max_distance|artist_tracks|artist_projections|build_artist_projection|clap|sem_grove|mood_centroids|anchors|radios)(\/|$)/, service: 'index' },
  { pattern: /^\/external\//, service: 'index' },
  { pattern: /^\/chat\/api\/(chatPlaylist|chatPlaylistStream)$/, service: 'index' },
  { pattern: /^\/chat\/api\/create_playlist$/, service: 'playlist' },
];

export function serviceFor(path: string): ServiceName | undefined {
  return ROUTES.find((r) => r.pattern.test(path))?.service;
}

/**
 * Admin-only mutations, enforced here by route and again by the owning service (defence in depth).
 * Everything else under /api needs any authenticated user.
 */
const ADMIN_ONLY: Array<{ methods: string[]; pattern: RegExp }> = [
  { methods: ['POST', 'PUT', 'DELETE', 'PATCH'], pattern: /^\/api\/servers(\/|$)/ },
  { methods: ['POST', 'PUT', 'DELETE', 'PATCH'], pattern: /^\/api\/config(\/|$)/ },
  { methods: ['GET'], pattern: /^\/api\/config\/settings\/?$/ },
  { methods: ['POST', 'PUT', 'DELETE', 'PATCH'], pattern: /^\/api\/plex(\/|$)/ },
  { methods: ['POST'], pattern: /^\/api\/(analysis|cleaning|clustering|cancel|cancel_all|index|rebuild_map_cache|build_artist_projection)(\/|$)/ },
  { methods: ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'], pattern: /^\/api\/(cron|backup|tasks)(\/|$)/ },
  { methods: ['GET', 'POST', 'DELETE'], pattern: /^\/api\/users\/?$/ },
  { methods: ['DELETE'], pattern: /^\/api\/users\/[^/]+$/ },
];

export function isAdminOnly(method: string, path: string): boolean {
  return ADMIN_ONLY.some((r) => r.methods.includes(method.toUpperCase()) && r.pattern.test(path));
}

/** Paths reachable without authentication while no admin exists (first-run Setup). */
export function isSetupPath(path: string): boolean {
  return /^\/api\/(servers|setup|plex|config|active_tasks|last_task|status|cancel)(\/|$)/.test(path);
}

/** Services whose requests carry a resolved `server` (the registry resolves its own ids). */
export function needsServerResolution(service: ServiceName): boolean {
  return service !== 'registry';
}
