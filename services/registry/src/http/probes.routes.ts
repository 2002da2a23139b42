import type { Request } from 'express';
import { APP_VERSION, probeRoutes as routes, type SettingDto } from '@polyphony/contracts';
import { ValidationError, routeHandlers, type RouteHandlers } from '@polyphony/platform';
import type { ConfigService } from '../domain/config.service';
import type { ServerService } from '../domain/server.service';

/** A session admin (not a token, not the first-run window): the only caller that sees config-store values and media-server users. */
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
 *   400 when unknown); the user fields are null unless the caller is a session admin.
 * - `GET /chat/api/config_defaults`: provider and default model names (no keys, no URLs).
 * - `GET /api/version`.
 * `GET /api/config` also carries `learned_model`: the analysis worker's `GET /api/analysis/model` answer
 * (status ready | missing | error | loading, model id, how to install the MusiCNN files, and for session
 * admins the reason, which may name a server path), or
 * `{status: 'unknown', reason}` when the worker does not answer within 2 s (cached 10 s).
 */
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
  r.json(routes.configDefaults, async ({ query: q }, req) => {
    const s = await servers.resolve(q.server);
    if (!s && q.server !== undefined) throw new ValidationError(`Unknown server "${q.server}": give a configured server's display name or id`);
    const admin = isSessionAdmin(req);
    return {
      server_type: s?.type ?? null,
      default_user_id: admin && s?.creds.user_id ? s.creds.user_id : null,
      default_user: admin && s?.creds.user ? s.creds.user : null,
    };
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
