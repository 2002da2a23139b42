import { AlchemyItem } from './features';
import { defineRoute } from './openapi';
import { SERVICE_DEFAULTS } from './probes';
import { z } from './zod';

/**
 * Saved alchemy: anchors and radios (issue 14 "Alchemy anchors and radios"; reference
 * `/api/anchors`, `/api/radios`, `/api/radios/run`, plugin-calls.md L17).
 *
 * - An anchor is a named point of the embedding space: the normalised mean of up to
 *   ALCHEMY_MAX_ANCHOR_POINTS ADD items (songs, artists, moods, playlists, other anchors), with
 *   exclusions (the SUBTRACT items' vectors and their radius) that are re-applied wherever the anchor
 *   is used (alchemy `type: anchor`, `find_path?start_anchor|end_anchor`, `similar_tracks?anchor_id`).
 *   It is computed once, when saved, and stored durably (user data: backed up and restored).
 * - A radio is a saved alchemy recipe: an anchor plus `n_results` and `temperature`. Running the radios
 *   creates or replaces one playlist `<anchor name>_radio` per enabled radio on every configured server,
 *   with that server's songs only.
 */

/** Reference ALCHEMY_MAX_ANCHOR_POINTS: ADD items of one anchor. */
export const ALCHEMY_MAX_ANCHOR_POINTS = 16;
/** SUBTRACT items of one anchor (same bound as its points). */
export const ALCHEMY_MAX_ANCHOR_EXCLUSIONS = 16;
/** Stored exclusion vectors of one anchor (an artist item subtracts each of its songs; the rest is cut, nearest-first order of the input). */
export const ANCHOR_MAX_EXCLUSION_VECTORS = 500;
/** Suffix of every radio playlist on a media server (user playlists never carry it, so they are never replaced). */
export const RADIO_SUFFIX = '_radio';

const Name = z.preprocess(
  (v) => (typeof v === 'string' ? v.trim() : v),
  z
    .string({ required_error: 'name is required' })
    .min(1, 'name is required')
    .max(200)
    .refine((v) => !/[\u0000-\u001f\u007f]/.test(v), 'name must not contain control characters'),
);
const Vector = z.array(z.number().finite()).min(1).max(4096);
const PositiveId = z.preprocess((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v), z.number({ invalid_type_error: 'id must be a positive integer' }).int().positive().max(2 ** 31 - 1));

export const AnchorIdParams = z.object({ id: PositiveId });

/** One exclusion of an anchor: a unit vector and the cosine distance around it inside which songs are dropped. */
export const AnchorExclusion = z.object({ vector: Vector, distance: z.number().finite().min(0).max(2).nullable().optional() });
export type AnchorExclusion = z.infer<typeof AnchorExclusion>;

/**
 * POST /api/anchors: either a recipe (`items`, resolved on the selected server, at most 16 ADD and 16
 * SUBTRACT items) or, as the reference UI saves it, a ready `centroid` (the index's dimension) with
 * optional `exclusions`.
 */
export const AnchorCreateBody = z
  .object({
    name: Name,
    items: z.array(AlchemyItem).min(1).max(ALCHEMY_MAX_ANCHOR_POINTS + ALCHEMY_MAX_ANCHOR_EXCLUSIONS).optional(),
    centroid: Vector.optional(),
    exclusions: z.array(AnchorExclusion).max(ANCHOR_MAX_EXCLUSION_VECTORS).optional(),
    /** Radius of the SUBTRACT items of `items` (cosine distance), default 0.2 (reference ALCHEMY_SUBTRACT_DISTANCE_ANGULAR). */
    subtract_distance: z.number().finite().min(0).max(2).optional(),
  })
  .passthrough()
  .superRefine((v, ctx) => {
    if ((v.items === undefined) === (v.centroid === undefined)) ctx.addIssue({ code: 'custom', message: 'Give either items (songs, artists, moods, playlists, anchors) or a centroid' });
    if (v.items) {
      const adds = v.items.filter((i) => i.op === 'ADD').length;
      if (adds === 0) ctx.addIssue({ code: 'custom', path: ['items'], message: 'An anchor needs at least one ADD item' });
      if (adds > ALCHEMY_MAX_ANCHOR_POINTS) ctx.addIssue({ code: 'custom', path: ['items'], message: `An anchor has at most ${ALCHEMY_MAX_ANCHOR_POINTS} anchor points (ADD items)` });
      if (v.items.length - adds > ALCHEMY_MAX_ANCHOR_EXCLUSIONS) ctx.addIssue({ code: 'custom', path: ['items'], message: `An anchor has at most ${ALCHEMY_MAX_ANCHOR_EXCLUSIONS} exclusions (SUBTRACT items)` });
    }
  });
export type AnchorCreateBody = z.infer<typeof AnchorCreateBody>;

export const AnchorRenameBody = z.object({ name: Name }).passthrough();

/** An anchor as listed (no vectors). */
export const AnchorDto = z
  .object({
    id: z.number().int(),
    name: z.string(),
    /** ADD items it was made from (0 when saved as a ready centroid). */
    points: z.number().int(),
    /** Stored exclusion vectors. */
    exclusions: z.number().int(),
    /** The recipe as saved (song ids canonical), null when saved as a ready centroid. */
    items: z.array(z.object({ id: z.string(), op: z.enum(['ADD', 'SUBTRACT']), type: z.string() })).nullable(),
    /** Dimension of its centroid (must equal the index's to be used). */
    dim: z.number().int(),
    created_by: z.string().nullable(),
    created_at: z.string(),
    /**
     * Embedder version of the vectors it was computed against (null: unknown). When the library has switched to
     * another embedder since, using the anchor is a 409 `embedder_version_mismatch`: save it again.
     */
    embedder_version: z.string().nullable(),
  })
  .openapi('Anchor');
export type AnchorDto = z.infer<typeof AnchorDto>;
export const AnchorListResponse = z.object({ anchors: z.array(AnchorDto) }).openapi('AnchorList');
export const AnchorResponse = z.object({ anchor: AnchorDto.extend({ unresolved: z.array(z.string()).optional() }) }).openapi('AnchorResponse');

// ---------------------------------------------------------------------------------------------------
// Radios

const Temperature = z.preprocess((v) => (typeof v === 'string' && v.trim() !== '' ? Number(v) : v), z.number({ invalid_type_error: 'temperature must be a number' }).finite().min(0, 'temperature must be 0 or greater').max(100));
const NResults = z.preprocess(
  (v) => (typeof v === 'string' && v.trim() !== '' ? Number(v) : v),
  z.number({ invalid_type_error: 'n_results must be an integer' }).int('n_results must be an integer').min(1, `n_results must be between 1 and ${SERVICE_DEFAULTS.alchemyMaxN}`).max(SERVICE_DEFAULTS.alchemyMaxN, `n_results must be between 1 and ${SERVICE_DEFAULTS.alchemyMaxN}`),
);

/**
 * POST /api/radios: a radio on a saved anchor (`anchor_id`, one radio per anchor, as the reference), or
 * on a new recipe (`name` + `items`: the anchor is saved first under that name). Defaults: temperature
 * 1.0 (ALCHEMY_TEMPERATURE), n_results 100 (ALCHEMY_DEFAULT_N_RESULTS), enabled true.
 */
export const RadioCreateBody = z
  .object({
    anchor_id: PositiveId.optional(),
    name: Name.optional(),
    items: z.array(AlchemyItem).min(1).max(ALCHEMY_MAX_ANCHOR_POINTS + ALCHEMY_MAX_ANCHOR_EXCLUSIONS).optional(),
    temperature: Temperature.optional(),
    n_results: NResults.optional(),
    enabled: z.boolean().optional(),
  })
  .passthrough()
  .superRefine((v, ctx) => {
    const recipe = v.name !== undefined || v.items !== undefined;
    if ((v.anchor_id === undefined) === !recipe) ctx.addIssue({ code: 'custom', message: 'Give either anchor_id or a recipe (name and items)' });
    if (recipe && (v.name === undefined || v.items === undefined)) ctx.addIssue({ code: 'custom', message: 'A radio recipe needs both name and items' });
  });
export type RadioCreateBody = z.infer<typeof RadioCreateBody>;

/** PUT /api/radios/:id: any of temperature, n_results, enabled (absent fields keep their value). */
export const RadioUpdateBody = z.object({ temperature: Temperature.optional(), n_results: NResults.optional(), enabled: z.boolean().optional() }).passthrough();

export const RadioDto = z
  .object({
    id: z.number().int(),
    anchor_id: z.number().int(),
    /** The anchor's name (the playlist is `<name>_radio`). */
    name: z.string(),
    temperature: z.number(),
    n_results: z.number().int(),
    enabled: z.boolean(),
    playlist_name: z.string(),
  })
  .openapi('Radio');
export type RadioDto = z.infer<typeof RadioDto>;
export const RadioListResponse = z.object({ radios: z.array(RadioDto) }).openapi('RadioList');
export const RadioResponse = z.object({ radio: RadioDto }).openapi('RadioResponse');

/** POST /api/radios/run: `wait: false` answers 202 with the task id at once (the scheduler); otherwise the run's summary once it ends (the Lyrion plugin waits 180 s). */
export const RadioRunBody = z.object({ wait: z.boolean().optional() }).passthrough();
export const RadioRunSummary = z
  .object({
    playlists_created: z.number().int(),
    radios_enabled: z.number().int(),
    servers_enabled: z.number().int(),
    message: z.string(),
    /** `<radio>@<server>` of each playlist that could not be written. */
    failed: z.array(z.string()),
    task_id: z.string(),
    status: z.string(),
  })
  .openapi('RadioRunSummary');
export type RadioRunSummary = z.infer<typeof RadioRunSummary>;

/** POST /internal/playlists/radio (playlist service): replace the radio playlist `<name>_radio` on one server. */
export const RadioPlaylistRequest = z.object({
  serverId: z.string().min(1).max(200),
  /** Radio name without the suffix. */
  name: z.string().min(1).max(200),
  /** Track ids (provider ids of the server, or canonical ids), in order. */
  ids: z.array(z.string().min(1).max(500)).min(1).max(1000),
  runId: z.string().max(100).optional(),
  /**
   * `radio` (default): the playlist is `<name>_radio`, recorded as a radio. `album_of_the_week`: the playlist is
   * `<name>` as given (one fixed name per server), recorded as an Album of the Week (issue 31).
   */
  kind: z.enum(['radio', 'album_of_the_week']).optional(),
  /**
   * Households (issue 34): the radio's creator (gateway user id). With it the playlist is written with that user's
   * own linked account on the server when there is one (recorded as private to the user), else with the server's.
   */
  userId: z.string().min(1).max(200).optional(),
});
export const RadioPlaylistResponse = z.object({
  playlistId: z.string(),
  name: z.string(),
  written: z.number().int(),
  replaced: z.number().int(),
  /** Whose account wrote it: the radio creator's linked account (`user`) or the server's. */
  account: z.enum(['user', 'server']).optional(),
});
export type RadioPlaylistResponse = z.infer<typeof RadioPlaylistResponse>;

const tags = ['alchemy'];
const idParams = AnchorIdParams;
export const savedAlchemyRoutes = {
  listAnchors: defineRoute({ method: 'get', path: '/api/anchors', summary: 'Saved alchemy anchors (no vectors)', tags, access: 'user', service: 'index', response: AnchorListResponse }),
  getAnchor: defineRoute({ method: 'get', path: '/api/anchors/:id', summary: 'One saved anchor', tags, access: 'user', service: 'index', params: idParams, response: AnchorResponse }),
  // A ready-centroid anchor carries up to 500 exclusion vectors of the index's dimension (200 numbers of ~10 characters): about 1 MB.
  createAnchor: defineRoute({ method: 'post', path: '/api/anchors', summary: 'Saves an anchor: the centroid of up to 16 songs/artists/moods/playlists with exclusions, or a ready centroid', tags, access: 'user', service: 'index', bodyLimit: 2 * 1024 * 1024, body: AnchorCreateBody, response: AnchorResponse }),
  renameAnchor: defineRoute({ method: 'put', path: '/api/anchors/:id', summary: 'Renames an anchor', tags, access: 'user', service: 'index', params: idParams, body: AnchorRenameBody, response: AnchorResponse }),
  deleteAnchor: defineRoute({ method: 'delete', path: '/api/anchors/:id', summary: 'Deletes an anchor (and its radio)', tags, access: 'user', service: 'index', params: idParams, response: z.object({ deleted: z.boolean() }) }),
  listRadios: defineRoute({ method: 'get', path: '/api/radios', summary: 'Saved radios {name, enabled, n_results, ...}', tags, access: 'user', service: 'index', response: RadioListResponse }),
  createRadio: defineRoute({ method: 'post', path: '/api/radios', summary: 'Saves a radio on an anchor (or on a new recipe)', tags, access: 'user', service: 'index', body: RadioCreateBody, response: RadioResponse }),
  updateRadio: defineRoute({ method: 'put', path: '/api/radios/:id', summary: 'Changes temperature, n_results or enabled of a radio', tags, access: 'user', service: 'index', params: idParams, body: RadioUpdateBody, response: RadioResponse }),
  deleteRadio: defineRoute({ method: 'delete', path: '/api/radios/:id', summary: 'Deletes a radio (its anchor stays)', tags, access: 'user', service: 'index', params: idParams, response: z.object({ deleted: z.boolean() }) }),
  runRadios: defineRoute({ method: 'post', path: '/api/radios/run', summary: 'Creates or replaces `<name>_radio` on every server for each enabled radio (task `radios`)', tags, access: 'user', service: 'index', body: RadioRunBody, response: RadioRunSummary }),
};
