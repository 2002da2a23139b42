import { existsSync } from 'node:fs';
import path from 'node:path';
import express, { type RequestHandler } from 'express';
import { StateUnavailableError } from '@polyphony/platform';

/** Cache lifetime of the content-hashed bundles (a changed file gets a new name): one year. */
export const ASSET_MAX_AGE_SECONDS = 365 * 24 * 60 * 60;

/**
 * The built web UI (`npm run build` -> scripts/build-ui.mjs -> gateway/dist/public): the HTML pages
 * are answered `Cache-Control: no-cache` (always revalidated, so a deploy shows at once), the
 * content-hashed files under /assets with a one-year `immutable` cache. A missing build answers
 * 503 `ui_not_built` naming the command, instead of a bare 404. Same in both run modes: the
 * standalone process and the gateway container load this module from gateway/dist.
 */
export function webUi(dir: string): { page(file: string): RequestHandler; assets: RequestHandler } {
  const notBuilt = () => new StateUnavailableError('ui_not_built', 'The web UI is not built: run `npm run build`');
  return {
    page(file: string): RequestHandler {
      const full = path.join(dir, file);
      return (_req, res, next) => {
        if (!existsSync(full)) return next(notBuilt());
        res.setHeader('Cache-Control', 'no-cache');
        res.sendFile(full, { cacheControl: false }, (err) => {
          if (err) next(err);
        });
      };
    },
    assets: express.static(path.join(dir, 'assets'), {
      immutable: true,
      maxAge: ASSET_MAX_AGE_SECONDS * 1000,
      index: false,
    }),
  };
}
