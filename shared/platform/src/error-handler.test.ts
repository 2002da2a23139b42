import express from 'express';
import request from 'supertest';
import type { Logger } from './logger';
import { RETRY_AFTER_SECONDS, StateUnavailableError, UpstreamUnavailableError, ValidationError } from './errors';
import { errorHandler } from './http';

/** A logger that records (level, message) pairs. */
function recordingLogger(): { logger: Logger; lines: Array<[string, string]> } {
  const lines: Array<[string, string]> = [];
  const at = (level: string) => (message: string) => void lines.push([level, message]);
  const logger = { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') } as unknown as Logger;
  return { logger, lines };
}

function appThrowing(err: unknown) {
  const rec = recordingLogger();
  const app = express();
  app.use((req, _res, next) => {
    req.requestId = 'req-x';
    next();
  });
  app.get('/x', () => {
    throw err;
  });
  app.use(errorHandler(rec.logger));
  return { app, lines: rec.lines };
}

describe('errorHandler: status, error envelope and log level per error kind', () => {
  it('a state the operator must set up (StateUnavailableError) is a 503 with its code, logged at warn, not error', async () => {
    const { app, lines } = appThrowing(new StateUnavailableError('tags_unavailable', 'install the model'));
    const res = await request(app).get('/x');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: 'install the model', code: 'tags_unavailable', request_id: 'req-x' });
    // Retrying cannot help: no Retry-After.
    expect(res.headers['retry-after']).toBeUndefined();
    expect(lines.map(([l]) => l)).toEqual(['warn']);
  });

  it('an upstream fault (UpstreamUnavailableError) is a 503 logged at error', async () => {
    const { app, lines } = appThrowing(new UpstreamUnavailableError('catalogue unreachable'));
    const res = await request(app).get('/x');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: 'catalogue unreachable', code: 'upstream_unavailable', request_id: 'req-x' });
    expect(res.headers['retry-after']).toBe(String(RETRY_AFTER_SECONDS));
    expect(lines.map(([l]) => l)).toContain('error');
  });

  it('a database connection fault (pg ECONNREFUSED, SQLSTATE 57P01) is a 503 with Retry-After, logged at warn', async () => {
    for (const err of [Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })]) {
      const { app, lines } = appThrowing(err);
      const res = await request(app).get('/x');
      expect([res.status, res.body.code, res.headers['retry-after']]).toEqual([503, 'upstream_unavailable', String(RETRY_AFTER_SECONDS)]);
      expect(lines.map(([l]) => l)).toEqual(['warn']);
    }
  });

  it('a validation error is a 400 and logs nothing at error', async () => {
    const { app, lines } = appThrowing(new ValidationError('bad n'));
    const res = await request(app).get('/x');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'bad n', code: 'validation_failed', request_id: 'req-x' });
    expect(lines.filter(([l]) => l === 'error')).toEqual([]);
  });

  it('a validation error with details (the schema issues) answers them beside the message', async () => {
    const issues = [{ path: ['n'], message: 'Expected number', code: 'invalid_type' }];
    const { app } = appThrowing(new ValidationError('Invalid query: n: Expected number', issues));
    const res = await request(app).get('/x');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'Invalid query: n: Expected number', code: 'validation_failed', request_id: 'req-x', details: issues });
  });

  it('an unknown error is a 500 without internals in the body', async () => {
    const { app } = appThrowing(new Error('secret internals at /var/lib/x'));
    const res = await request(app).get('/x');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: 'Internal server error', code: 'internal_error', request_id: 'req-x' });
    expect(JSON.stringify(res.body)).not.toContain('/var/lib/x');
  });
});
