import { defineRoute } from './openapi';
import { z } from './zod';

export const ServerTypeSchema = z.enum(['jellyfin', 'emby', 'navidrome', 'lyrion', 'plex']);

type Kind = z.infer<typeof ServerTypeSchema>;

/**
 * Accepted credential key sets per server kind (reference implementation's names, so existing
 * setups carry over): a server's creds must hold every key of exactly one set. Navidrome also takes
 * `{url, api_key}` (OpenSubsonic API-key authentication, `apiKey=` parameter; reference section 4).
 */
export const CREDENTIAL_SETS: Record<Kind, string[][]> = {
  jellyfin: [['url', 'user_id', 'token']],
  emby: [['url', 'user_id', 'token']],
  navidrome: [['url', 'user', 'password'], ['url', 'api_key']],
  lyrion: [['url']],
  plex: [['url', 'token']],
};
/** The first (classic) credential set per kind, as the reference's single-server settings hold it. */
export const REQUIRED_CREDS: Record<Kind, string[]> = Object.fromEntries(
  Object.entries(CREDENTIAL_SETS).map(([k, sets]) => [k, sets[0] as string[]]),
) as Record<Kind, string[]>;
export const OPTIONAL_CREDS: Record<Kind, string[]> = {
  jellyfin: [],
  emby: [],
  navidrome: [],
  lyrion: ['user', 'password'],
  plex: [],
};
/**
 * The reference's single-server settings (app_config or environment of an old install) per kind: setting name ->
 * the registry credential it feeds (reference-implementation.md section 1.3/5). Read by the registry's legacy
 * config import and by the import from the reference's database.
 */
export const LEGACY_SERVER_KEYS: Record<Kind, Record<string, string>> = {
  jellyfin: { JELLYFIN_URL: 'url', JELLYFIN_USER_ID: 'user_id', JELLYFIN_TOKEN: 'token' },
  emby: { EMBY_URL: 'url', EMBY_USER_ID: 'user_id', EMBY_TOKEN: 'token' },
  navidrome: { NAVIDROME_URL: 'url', NAVIDROME_USER: 'user', NAVIDROME_PASSWORD: 'password' },
  lyrion: { LYRION_URL: 'url' },
  plex: { PLEX_URL: 'url', PLEX_TOKEN: 'token' },
};
/**
 * A Plex client identifier (the `X-Plex-Client-Identifier` header sent to plex.tv): 1-200 printable ASCII
 * characters without spaces, since an HTTP header cannot carry other characters (a bad one is a 400, not a 502).
 */
export const PlexClientId = z.string().min(1).max(200).regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces');
/** Keys whose values are secrets: never returned, masked on output, blank or mask on update keeps the stored value. */
export const SECRET_KEYS = ['token', 'password', 'api_key'];
/** What a secret looks like in a response (never the stored value). */
export const SECRET_MASK = '__unchanged__';

/**
 * How the service notices songs added to, changed on or removed from a server without a full analysis run
 * (issue 35): `off` (only analysis runs, sweeps and cleanings see changes), `poll` (a cheap "did the library
 * change" probe every `interval_seconds`, then the newest albums and a removal check), `push` (the same check
 * as soon as the server's webhook calls `POST /api/hooks/servers/{id}/changed`, plus a fallback poll every
 * `interval_seconds`). New servers poll every 900 s.
 */
export const ChangeDetectionMode = z.enum(['off', 'poll', 'push']);
export type ChangeDetectionMode = z.infer<typeof ChangeDetectionMode>;
/** Shortest and longest change-detection interval, seconds. */
export const CHANGE_DETECTION_MIN_SECONDS = 5;
export const CHANGE_DETECTION_MAX_SECONDS = 86_400;
export const CHANGE_DETECTION_DEFAULT = { mode: 'poll', interval_seconds: 900 } as const;
const ChangeInterval = z.number().int().min(CHANGE_DETECTION_MIN_SECONDS).max(CHANGE_DETECTION_MAX_SECONDS).openapi({ description: 'Seconds between two probes (poll), or between two fallback probes (push)' });
export const ChangeDetection = z
  .object({
    mode: ChangeDetectionMode,
    interval_seconds: ChangeInterval,
    push_token_set: z.boolean().openapi({ description: 'A push token is stored (the token itself is never returned)' }),
  })
  .strict()
  .openapi('ChangeDetection');
export type ChangeDetection = z.infer<typeof ChangeDetection>;
/**
 * On input every key may be left out (the stored or default value stays). `push_token` (16-200 characters,
 * write-only; blank or SECRET_MASK keeps the stored one) authenticates the server's webhook calls.
 */
export const ChangeDetectionInput = z
  .object({ mode: ChangeDetectionMode.optional(), interval_seconds: ChangeInterval.optional(), push_token: z.string().max(200).optional() })
  .strict()
  .openapi('ChangeDetectionInput');
export type ChangeDetectionInput = z.infer<typeof ChangeDetectionInput>;

const Creds = z.record(z.string().max(2000)).openapi({ description: 'Credential keys per kind: jellyfin/emby url,user_id,token (or POST /api/servers/signin); navidrome url,user,password or url,api_key; lyrion url (+user,password); plex url,token' });

export const ServerInput = z
  .object({
    name: z.string().trim().min(1).max(100),
    server_type: ServerTypeSchema,
    creds: Creds,
    music_libraries: z.array(z.string().min(1).max(1000)).max(500).optional(),
    is_default: z.boolean().optional(),
    make_default: z.boolean().optional(),
    change_detection: ChangeDetectionInput.optional(),
  })
  .strict()
  .openapi('ServerInput');

export const ServerUpdate = ServerInput.partial().strict().openapi('ServerUpdate');

export const ServerDto = z
  .object({
    server_id: z.string(),
    id: z.string(),
    name: z.string(),
    server_type: ServerTypeSchema,
    creds: z.record(z.string()).optional(),
    music_libraries: z.array(z.string()),
    is_default: z.boolean(),
    track_count: z.number().nullable(),
    matched_count: z.number().nullable(),
    change_detection: ChangeDetection,
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi('Server');

export const ServerListDto = z.object({ servers: z.array(ServerDto), default_id: z.string().nullable(), multi_server_enabled: z.literal(true) }).openapi('ServerList');

export const ServerTestBody = z
  .object({
    server_type: ServerTypeSchema,
    creds: Creds,
    music_libraries: z.array(z.string()).optional(),
    server_id: z.string().max(100).optional().openapi({ description: 'Test an existing server: blank or masked secrets are taken from it, but only while the url is the one it was saved with' }),
  })
  .openapi('ServerTestBody');

/** Why a connection test or library listing failed (the media-server client's error kinds). */
export const MediaServerErrorClass = z.enum(['bad_credentials', 'permission_denied', 'unreachable', 'protocol', 'not_found']);

export const ServerTestResult = z
  .object({
    ok: z.boolean(),
    reachable: z.boolean().openapi({ description: 'The server answered HTTP at all (false: refused, DNS, timeout, 5xx)' }),
    server_type: ServerTypeSchema,
    server_name: z.string().nullable(),
    version: z.string().nullable(),
    library_count: z.number().int(),
    libraries: z.array(z.object({ id: z.string(), name: z.string() })),
    sample_count: z.number().int(),
    path_format: z.enum(['absolute', 'relative', 'none']),
    error_class: MediaServerErrorClass.nullable(),
    error: z.string().nullable().openapi({ description: 'A fixed sentence per error_class (never text from the media server)' }),
    auth_failed: z.boolean(),
    warnings: z.array(z.string()),
  })
  .openapi('ServerTestResult');

export const ServerSignInBody = z
  .object({
    server_type: z.enum(['jellyfin', 'emby']),
    url: z.string().min(1).max(2000),
    username: z.string().min(1).max(200),
    password: z.string().max(1000),
    server_id: z.string().max(100).optional().openapi({ description: 'Store the obtained token on this existing server (url, user_id and token are replaced)' }),
    name: z.string().trim().min(1).max(100).optional().openapi({ description: 'Name of the new server (required without server_id)' }),
    music_libraries: z.array(z.string().min(1).max(1000)).max(500).optional(),
    make_default: z.boolean().optional(),
  })
  .strict()
  .openapi('ServerSignInBody');

const IdParams = z.object({ id: z.string().min(1).max(100) });

export const serverRoutes = {
  list: defineRoute({ method: 'get', path: '/api/servers', summary: 'List servers (credentials masked; none for non-admins) and the default id', tags: ['servers'], access: 'user', service: 'registry', firstRun: true, response: ServerListDto }),
  create: defineRoute({ method: 'post', path: '/api/servers', summary: 'Add a server; the first one becomes the default', tags: ['servers'], access: 'admin', service: 'registry', firstRun: true, body: ServerInput, response: ServerDto, status: 201 }),
  update: defineRoute({ method: 'put', path: '/api/servers/:id', summary: 'Edit a server; a blank or masked secret keeps the stored one', tags: ['servers'], access: 'admin', service: 'registry', firstRun: true, params: IdParams, body: ServerUpdate, response: ServerDto }),
  patch: defineRoute({ method: 'patch', path: '/api/servers/:id', summary: 'The same partial edit as PUT (the reference accepts both)', tags: ['servers'], access: 'admin', service: 'registry', firstRun: true, params: IdParams, body: ServerUpdate, response: ServerDto }),
  remove: defineRoute({ method: 'delete', path: '/api/servers/:id', summary: 'Delete a server and its mapping rows (never analyzed songs); the default is refused', tags: ['servers'], access: 'admin', service: 'registry', firstRun: true, params: IdParams }),
  makeDefault: defineRoute({ method: 'post', path: '/api/servers/:id/default', summary: 'Make this server the default', tags: ['servers'], access: 'admin', service: 'registry', firstRun: true, params: IdParams, response: ServerDto }),
  test: defineRoute({ method: 'post', path: '/api/servers/test', summary: 'Test a connection before saving: a structured result only (no upstream text); a stored secret is only sent to the url it was saved with', tags: ['servers'], access: 'admin', service: 'registry', firstRun: true, body: ServerTestBody, response: ServerTestResult }),
  libraries: defineRoute({ method: 'post', path: '/api/servers/libraries', summary: 'Libraries / sections / music folders / paths for the filter (502 when the media server is unreachable or misbehaves)', tags: ['servers'], access: 'admin', service: 'registry', firstRun: true, body: ServerTestBody }),
  signIn: defineRoute({ method: 'post', path: '/api/servers/signin', summary: 'Jellyfin/Emby username+password sign-in (AuthenticateByName): stores the obtained token and user id on a new or existing server; the password is never stored', tags: ['servers'], access: 'admin', service: 'registry', firstRun: true, body: ServerSignInBody, response: ServerDto }),
  sweep: defineRoute({ method: 'post', path: '/api/servers/:id/sweep', summary: 'Enqueue the metadata matching sweep for one server', tags: ['servers'], access: 'admin', service: 'registry', firstRun: true, params: IdParams, status: 202 }),
  align: defineRoute({ method: 'post', path: '/api/servers/align', summary: 'Enqueue one alignment over every server', tags: ['servers'], access: 'admin', service: 'registry', firstRun: true, status: 202 }),
  changed: defineRoute({ method: 'post', path: '/api/hooks/servers/:id/changed', summary: "A media server's webhook (Jellyfin/Emby Webhook plugin, Plex webhooks, a script after a Subsonic or Lyrion rescan): the change check of that server runs now. Authenticated by the server's push token (`token` query parameter or `X-Polyphony-Token` header; 401 otherwise); the body is never read (the check asks the server itself). The gateway answers it and hands the token to the analysis worker (POST /internal/change-watch/:serverId/nudge). 202", tags: ['servers'], access: 'public', service: 'gateway', params: IdParams, query: z.object({ token: z.string().max(200).optional() }), status: 202 }),
  plexPin: defineRoute({ method: 'post', path: '/api/plex/pin', summary: 'Start Plex PIN account linking: returns the code and link URL', tags: ['servers'], access: 'admin', service: 'registry', firstRun: true, body: z.object({ client_id: PlexClientId }) }),
  plexPinPoll: defineRoute({ method: 'get', path: '/api/plex/pin/:id', summary: 'Poll a Plex PIN until its token appears', tags: ['servers'], access: 'admin', service: 'registry', firstRun: true, params: z.object({ id: z.string().min(1).max(100).regex(/^\d+$/, 'numeric PIN id') }), query: z.object({ client_id: PlexClientId }) }),
};
