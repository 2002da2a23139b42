import type { Request } from 'express';
import { APP_VERSION, probeRoutes as routes, type ConfigDefaultsDto, type SettingDto, type z } from '@polyphony/contracts';
import { ValidationError, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { ConfigService } from '../domain/config.service';
import type { ServerService } from '../domain/server.service';

/** A session admin (not a token, not the first-run window): the only caller that sees config-store values and media-server URLs and users in `GET /api/config`. */
function isSessionAdmin(req: Request): boolean {
  return req.identity?.role === 'admin' && (req.identity.via === 'cookie' || req.identity.via === 'anonymous');
}

/**
 * Configuration and probe endpoints owned by the registry (shapes: shared/contracts/src/probes.ts):
 * - `GET /api/config`: the public fields for every authenticated caller; a session admin also gets the
 *   general config store with the read-only projection of the default server, secrets masked
 *   (ConfigService.adminView), and `settings`: every editable setting with its value (secrets masked),
 *   source (default | env | database), owner and whether it applies live (as `GET /api/config/settings`).
 *   Bearer tokens and non-admins never see a media-server URL or user.
 * - `GET /api/config/defaults`: kind and default user of the selected server (`server` = name or id;
 *   400 when unknown) for every authenticated caller (see configDefaultsOf; never a secret).
 * - `GET /chat/api/config_defaults`: provider and default model names (no keys, no URLs).
 * - `GET /api/version`.
 * `GET /api/config` also carries `learned_model`: the analysis worker's `GET /api/analysis/model` answer
 * (status ready | missing | error | loading, model id, how to install the MusiCNN files, and for session
 * admins the reason, which may name a server path), or
 * `{status: 'unknown', reason}` when the worker does not answer within 2 s (cached 10 s).
 */
/**
 * The `GET /api/config/defaults` answer for a server (reference-implementation.md section 3; issue 30: a player
 * pre-fills its sonic-fingerprint account with it): `default_user` = the stored user name of a Subsonic
 * (navidrome) or Lyrion server, `default_user_id` = the stored user id of a Jellyfin or Emby server, each a
 * string or null (other kinds, an API-key Subsonic server, a Lyrion server without a user). Only these two
 * credential fields are ever read: never a password, token or API key.
 */
export function configDefaultsOf(s: { type: string; creds: Record<string, unknown> } | undefined): z.infer<typeof ConfigDefaultsDto> {
  const text = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v : null);
  const byUserName = s?.type === 'navidrome' || s?.type === 'lyrion';
  const byUserId = s?.type === 'jellyfin' || s?.type === 'emby';
  return {
    server_type: s?.type ?? null,
    default_user_id: byUserId ? text(s.creds.user_id) : null,
    default_user: byUserName ? text(s.creds.user) : null,
  };
}

export function probeRoutesRouter(servers: ServerService, config: ConfigService, learnedModel?: () => Promise<unknown>, settingsList?: () => Promise<SettingDto[]>): RouteHandlers {
  const r = routeHandlers();
  r.json(routes.config, async (_input, req) => {
    const admin = isSessionAdmin(req);
    const learned = learnedModel ? ((await learnedModel()) as Record<string, unknown>) : undefined;
    // The reason may name a server path: session admins only.
    const learnedView = learned && (admin ? learned : { status: learned.status, model: learned.model ?? null, howToInstall: learned.howToInstall });
    const pub = { ...(await config.publicView()), ...(learnedView ? { learned_model: learnedView } : {}) };
    return admin ? { ...(await config.adminView()), ...pub, ...(settingsList ? { settings: await settingsList() } : {}) } : pub;
  });
  r.json(routes.configDefaults, async ({ query: q }) => {
    const s = await servers.resolve(q.server);
    if (!s && q.server !== undefined) throw new ValidationError(`Unknown server "${q.server}": give a configured server's display name or id`);
    return configDefaultsOf(s);
  });
  r.json(routes.chatConfigDefaults, async () => {
    const ai = await config.aiDefaults();
    return {
      default_ai_provider: ai.provider,
      default_ollama_model_name: ai.ollama,
      default_openai_model_name: ai.openai,
      default_gemini_model_name: ai.gemini,
      default_mistral_model_name: ai.mistral,
    };
  });
  r.json(routes.version, () => ({ app_version: APP_VERSION }));
  return r;
}
