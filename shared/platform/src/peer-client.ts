import { buildPath, routeKey, type CallInput, type ResponseOf, type RouteDef, type RouteService } from '@polyphony/contracts';
import type { z, ZodTypeAny } from 'zod';
import { AppError } from './errors';
import { withTransientRetry, type TransientRetryOptions } from './faults';
import type { CallerIdentity } from './internal-auth';
import type { ServiceClient } from './service-client';

export interface PeerCallOptions {
  /** Forward this caller's identity instead of the calling service's internal admin identity. */
  identity?: CallerIdentity;
}

/**
 * Typed calls to one peer service, read from the contracts route table: `peer.call(api.internal.
 * idsMapOutput, { body: { serverId, itemIds } })` builds the path from the route, sends it through
 * the platform's `ServiceClient` (signed internal identity header, request-id propagation, per-call
 * timeout, callee errors mapped back to AppError with their status) and parses the answer with the
 * route's response schema (a mismatch is a 502 `upstream_error`, never a crash further in).
 *
 * Retries: GET calls are idempotent and retried on transient faults (connection refused/reset, 503)
 * with the platform's jittered backoff (`withTransientRetry`; default 3 retries, 100 ms first delay,
 * 2 s cap); other methods are sent once (a lost answer to a POST must not run it twice).
 * Calling a route another service owns is a programming error (throws).
 */
export class PeerClient {
  constructor(
    private readonly client: ServiceClient,
    readonly service: RouteService,
    private readonly retry: TransientRetryOptions = { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 2000 },
  ) {}

  /** Calls `route` and parses the answer with its response schema. */
  async call<R extends RouteDef>(route: R, input: CallInput<R> = {}, options: PeerCallOptions = {}): Promise<ResponseOf<R>> {
    return this.send(route, route.response, input, options) as Promise<ResponseOf<R>>;
  }

  /**
   * Calls `route` and parses the answer with `schema`, a narrower view of its response (only the
   * fields this caller reads, so a callee that answers more, or a test double that answers less of
   * the rest, is accepted).
   */
  async callAs<R extends RouteDef, S extends ZodTypeAny>(route: R, schema: S, input: CallInput<R> = {}, options: PeerCallOptions = {}): Promise<z.output<S>> {
    return this.send(route, schema, input, options) as Promise<z.output<S>>;
  }

  /**
   * Calls `route` asking for one of its `alternateTypes` first and JSON second (`Accept: <type>, application/json;q=0.5`)
   * and returns the answer unparsed: the caller decodes the alternate type, or parses JSON when the callee (an older
   * version, a test double) answered JSON. GET calls are retried like `call`'s.
   * @throws Error when `type` is not one of the route's `alternateTypes` (a programming error)
   */
  async callBytes<R extends RouteDef>(route: R, type: string, input: CallInput<R> = {}, options: PeerCallOptions = {}): Promise<{ contentType: string; body: Uint8Array }> {
    const { path, query, method } = this.target(route, input);
    if (!route.alternateTypes?.includes(type)) throw new Error(`${routeKey(route)} does not answer ${type}`);
    const send = () => this.client.requestBytes(method, path, `${type}, application/json;q=0.5`, { identity: options.identity, query });
    return method === 'GET' ? withTransientRetry(send, this.retry) : send();
  }

  /**
   * Calls `route` asking for its `alternateTypes` `types` in that order of preference and JSON last (an older callee
   * answers the first it knows), and hands the
   * answer's body over as it arrives (`ServiceClient.requestStream`: no limit on the whole answer's time). Opening
   * the call (until the headers) is retried like `call`'s for GET; a failure while reading is the caller's to handle.
   * @throws Error when `type` is not one of the route's `alternateTypes` (a programming error)
   */
  async callStream<R extends RouteDef>(route: R, types: readonly string[], input: CallInput<R> = {}, options: PeerCallOptions = {}): Promise<{ contentType: string; chunks: AsyncIterable<Uint8Array>; cancel(): void }> {
    const { path, query, method } = this.target(route, input);
    for (const type of types) if (!route.alternateTypes?.includes(type)) throw new Error(`${routeKey(route)} does not answer ${type}`);
    // `types` in order of preference (q 1, 0.9, 0.8, ...), JSON last.
    const accept = [...types.map((t, i) => (i === 0 ? t : `${t};q=${(1 - i / 10).toFixed(1)}`)), 'application/json;q=0.5'].join(', ');
    const send = () => this.client.requestStream(method, path, accept, { identity: options.identity, query });
    return method === 'GET' ? withTransientRetry(send, this.retry) : send();
  }

  /**
   * Path (with its parameters filled in), query and upper-case method of a call of `route`.
   * @throws Error when the route belongs to another service (a programming error)
   */
  private target(route: RouteDef, input: CallInput<RouteDef>): { path: string; query: Record<string, string | number | undefined> | undefined; method: string } {
    if (route.service !== this.service) throw new Error(`${routeKey(route)} belongs to ${route.service}, not ${this.service}`);
    return {
      path: buildPath(route.path, input.params as Record<string, unknown> | undefined),
      query: input.query as Record<string, string | number | undefined> | undefined,
      method: route.method.toUpperCase(),
    };
  }

  private async send(route: RouteDef, schema: ZodTypeAny | undefined, input: CallInput<RouteDef>, options: PeerCallOptions): Promise<unknown> {
    const { path, query, method } = this.target(route, input);
    const send = () => this.client.request<unknown>(method, path, method === 'GET' || method === 'DELETE' ? undefined : (input.body ?? {}), { identity: options.identity, query });
    const raw = method === 'GET' ? await withTransientRetry(send, this.retry) : await send();
    if (!schema) return raw;
    const parsed = schema.safeParse(raw);
    if (!parsed.success) throw new AppError('upstream_error', `${this.service} answered ${routeKey(route)} with an unexpected shape: ${parsed.error.issues[0]?.message ?? 'invalid'}`, 502);
    return parsed.data;
  }
}
