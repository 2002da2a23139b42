import { defineRoute } from './openapi';
import { PlexClientId, ServerTypeSchema } from './servers';
import { z } from './zod';

/**
 * Households (issue 34): each polyphony user may link their own account on each media server. The
 * account's secrets are stored by the registry like a server's (never answered, never logged, never sent
 * to the browser); the account always talks to the server's own stored URL (a user never chooses where a
 * secret goes). Playlists the user creates are then written with that account and are private to the
 * user in polyphony's lists; without a linked account the server's account is used, as before.
 *
 * Credential kinds per server kind (the registry's sign-in flows, without the URL):
 * - navidrome (any Subsonic server): `{user, password}` or `{api_key}`;
 * - jellyfin / emby: `{username, password}` (AuthenticateByName; the password is used once and never
 *   stored), or `{user_id, token}`;
 * - plex: `{token}`, or `{plex_pin_id, client_id}` of a PIN started with POST /api/me/plex/pin (the
 *   registry reads the token from plex.tv itself; the browser never sees it);
 * - lyrion: none (Lyrion Music Server has no per-user accounts: one server-wide login): 400.
 */
export const AccountLinkBody = z
  .object({
    user: z.string().min(1).max(200).optional(),
    username: z.string().min(1).max(200).optional(),
    password: z.string().min(1).max(1000).optional(),
    api_key: z.string().min(1).max(2000).optional(),
    user_id: z.string().min(1).max(200).optional(),
    token: z.string().min(1).max(2000).optional(),
    plex_pin_id: z.string().regex(/^\d{1,20}$/, 'numeric PIN id').optional(),
    client_id: PlexClientId.optional(),
  })
  .strict()
  .openapi('AccountLinkBody');
export type AccountLinkBody = z.infer<typeof AccountLinkBody>;

/** State of one user's account on one server. */
export const AccountStatus = z.enum(['linked', 'not_linked', 'needs_relink']).openapi({
  description: 'linked: playlists are written with this account; not_linked: the server account is used; needs_relink: the stored secret was dropped (e.g. a restore from a backup without secrets): the server account is used until the user links again',
});

/** GET/PUT answer: a user's account on one server, without any secret. */
export const AccountDto = z
  .object({
    server_id: z.string(),
    server_name: z.string(),
    server_type: ServerTypeSchema,
    status: AccountStatus,
    linked: z.boolean(),
    /** The account's user name (Subsonic `user`, Jellyfin/Emby user name or id, Plex account name when known); never a secret. */
    account_name: z.string().nullable(),
    /** Libraries this account can see, as read when it was linked (null: not linked). */
    libraries: z.array(z.object({ id: z.string(), name: z.string() })).nullable(),
    /** Whether the server kind can limit results to the account's libraries (see the docs: Subsonic music folders, Jellyfin/Emby views, Plex sections; Lyrion none). */
    library_scope_supported: z.boolean(),
    /**
     * The user asked for answers limited to the libraries this account can see (PUT .../account/library-scope). Applies
     * while the account is linked and the kind supports it; read live from the server (cached 60 s) on each answer.
     */
    limit_to_libraries: z.boolean(),
    linked_at: z.string().nullable(),
  })
  .openapi('MediaServerAccount');
export type AccountDto = z.infer<typeof AccountDto>;

const ServerIdParams = z.object({ id: z.string().min(1).max(100) });

export const accountRoutes = {
  list: defineRoute({ method: 'get', path: '/api/me/accounts', summary: "The caller's own account on every server (linked state, no secrets)", tags: ['accounts'], access: 'user', service: 'registry', response: z.object({ accounts: z.array(AccountDto) }).openapi('MediaServerAccounts') }),
  get: defineRoute({ method: 'get', path: '/api/me/servers/:id/account', summary: "The caller's own account on one server (linked state, no secrets); 404 for an unknown server", tags: ['accounts'], access: 'user', service: 'registry', params: ServerIdParams, response: AccountDto }),
  link: defineRoute({
    method: 'put',
    path: '/api/me/servers/:id/account',
    summary: "Link the caller's own account on a server after verifying it against the server (400 refused credentials or a kind without accounts, 502 unreachable server)",
    tags: ['accounts'], access: 'user', service: 'registry', params: ServerIdParams, body: AccountLinkBody, response: AccountDto,
  }),
  unlink: defineRoute({ method: 'delete', path: '/api/me/servers/:id/account', summary: "Unlink the caller's own account on a server (204; playlists then use the server account)", tags: ['accounts'], access: 'user', service: 'registry', params: ServerIdParams, status: 204 }),
  libraryScope: defineRoute({
    method: 'put',
    path: '/api/me/servers/:id/account/library-scope',
    summary:
      "Limit (or stop limiting) the caller's answers on this server to the libraries their own linked account can see: similar songs, search, paths, alchemy, maps and the other reads of the index (400 `library_scope_not_supported` for Lyrion, 409 `account_not_linked` without a usable linked account, 404 unknown server)",
    tags: ['accounts'], access: 'user', service: 'registry', params: ServerIdParams, body: z.object({ limit_to_libraries: z.boolean() }).strict(), response: AccountDto,
  }),
  plexPin: defineRoute({ method: 'post', path: '/api/me/plex/pin', summary: 'Start Plex PIN linking of your own account: the code and link URL (finish with PUT /api/me/servers/{id}/account {plex_pin_id, client_id})', tags: ['accounts'], access: 'user', service: 'registry', body: z.object({ client_id: PlexClientId }).strict(), response: z.object({ id: z.string(), code: z.string(), link_url: z.string() }) }),
};

/** Internal: a server's connection for one user: their own account when linked, else the server's. */
export const ServerForUserResponse = z.object({
  id: z.string(),
  name: z.string(),
  type: ServerTypeSchema,
  isDefault: z.boolean(),
  connection: z.object({ type: ServerTypeSchema, creds: z.record(z.string().optional()), musicLibraries: z.array(z.string()).optional() }),
  /** Whose account `connection` is: the user's own (`user`) or the server's (`server`, the fallback). */
  account: z.enum(['user', 'server']),
});
export type ServerForUserResponse = z.infer<typeof ServerForUserResponse>;

/**
 * Internal (issue 34): which libraries of a server a user's answers are limited to. `limited` false: no limit (no
 * account linked, the user did not ask, or a kind without per-account libraries); `libraries` then null. Otherwise the
 * provider library ids the user's own account sees now (read with its credentials, cached 60 s), or null when the
 * account sees every library the server is analysed in (no filter needed: supysonic, for one, gives every user every
 * music folder).
 */
export const LibraryScopeResponse = z.object({
  limited: z.boolean(),
  libraries: z.array(z.string()).nullable(),
});
export type LibraryScopeResponse = z.infer<typeof LibraryScopeResponse>;

export const accountInternalRoutes = {
  libraryScope: defineRoute({
    method: 'get',
    path: '/internal/servers/:id/library-scope',
    service: 'registry',
    access: 'internal',
    tags: ['internal'],
    summary: "The libraries `userId`'s answers on a server are limited to (404 unknown server; 502 when the media server does not answer the account's library list: never an unlimited answer instead)",
    params: z.object({ id: z.string().min(1).max(200) }),
    query: z.object({ userId: z.string().min(1).max(200) }),
    response: LibraryScopeResponse,
  }),
  forgetUser: defineRoute({
    method: 'delete',
    path: '/internal/accounts/users/:userId',
    service: 'registry',
    access: 'internal',
    tags: ['internal'],
    summary: "Forget every media-server account of a deleted polyphony user (the gateway calls it after deleting the user); answers how many",
    params: z.object({ userId: z.string().min(1).max(200) }),
    response: z.object({ removed: z.number().int() }),
  }),
  serverForUser: defineRoute({
    method: 'get',
    path: '/internal/servers/:id/for-user',
    service: 'registry',
    access: 'internal',
    tags: ['internal'],
    summary: "One server with the connection of `userId`'s own account when linked, else the server's (404 unknown server)",
    params: z.object({ id: z.string().min(1).max(200) }),
    query: z.object({ userId: z.string().min(1).max(200).optional() }),
    response: ServerForUserResponse,
  }),
};
