import { Writable } from 'node:stream';
import request from 'supertest';
import winston from 'winston';
import { createLogger, type Logger } from '@polyphony/platform';

/**
 * Everything a suite saw: every log line the stack wrote (at debug level, through the production
 * formats including redaction) and every HTTP response the suite received (status, headers, body).
 * `leaks(secrets)` lists which secret values appear anywhere in it (plain, URL-encoded or base64).
 */
export class Capture {
  readonly lines: string[] = [];
  readonly responses: Array<{ what: string; status: number; headers: Record<string, unknown>; text: string }> = [];

  /** A logger writing JSON lines into this capture instead of the console. */
  logger(): Logger {
    const logger = createLogger({ service: 'test', level: 'debug' });
    logger.clear();
    const lines = this.lines;
    logger.add(new winston.transports.Stream({ stream: new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }) }));
    return logger;
  }

  /** Records a supertest response (use as `.then(capture.keep('label'))` or call directly). */
  record(what: string, res: { status: number; headers: Record<string, unknown>; text?: string; body?: unknown }): void {
    this.responses.push({ what, status: res.status, headers: res.headers, text: res.text ?? JSON.stringify(res.body ?? '') });
  }

  /** supertest for `url` whose every response is recorded. */
  http(url: string): ReturnType<typeof request> {
    const agent = request(url);
    const wrap = (method: 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head') => (path: string) => {
      const test = agent[method](path);
      test.on('response', (res: { status: number; headers: Record<string, unknown>; text?: string; body?: unknown }) => this.record(`${method.toUpperCase()} ${path.slice(0, 200)}`, res));
      return test;
    };
    return { ...agent, get: wrap('get'), post: wrap('post'), put: wrap('put'), patch: wrap('patch'), delete: wrap('delete'), head: wrap('head') } as unknown as ReturnType<typeof request>;
  }

  /** Which of `secrets` (values at least 6 characters long) appear in a log line or a response. */
  leaks(secrets: string[]): Array<{ secret: string; where: string }> {
    const found: Array<{ secret: string; where: string }> = [];
    const variants = (s: string) => [s, encodeURIComponent(s), Buffer.from(s).toString('base64'), Buffer.from(s).toString('base64url')];
    for (const secret of secrets.filter((s) => s.length >= 6)) {
      for (const v of variants(secret)) {
        const line = this.lines.find((l) => l.includes(v));
        if (line) found.push({ secret: secret.slice(0, 3) + '…', where: `log: ${line.slice(0, 300)}` });
        for (const r of this.responses) {
          const headers = Object.entries(r.headers)
            .filter(([k]) => k !== 'set-cookie')
            .map(([k, val]) => `${k}: ${String(val)}`)
            .join('\n');
          if (r.text.includes(v) || headers.includes(v)) found.push({ secret: secret.slice(0, 3) + '…', where: `response to ${r.what} (${r.status})` });
        }
      }
    }
    return found;
  }
}
