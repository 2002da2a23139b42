import { AsyncLocalStorage } from 'node:async_hooks';

/** Per-request (or per-message) context: set by the HTTP request-id middleware and by bus consumers. */
export interface RequestContext {
  requestId: string;
  userId?: string;
  /**
   * True while the HTTP request this context serves still waits for its answer (set by the request pipeline).
   * Database queries run while it is true get the request query time-out (`DB_REQUEST_QUERY_TIMEOUT_MS`);
   * work a handler left running after answering (a task it started) does not.
   */
  awaitingAnswer?: () => boolean;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` with `ctx` as the current request context. */
export function runWithContext<T>(ctx: RequestContext, fn: () => T): T {
  return storage.run(ctx, fn);
}

/** The current request context, if any. */
export function currentContext(): RequestContext | undefined {
  return storage.getStore();
}

/** Header carrying the request id between gateway, services and bus messages. */
export const REQUEST_ID_HEADER = 'x-request-id';
