import client from 'prom-client';
import type { NextFunction, Request, Response } from 'express';

/**
 * Prometheus metrics of one service, served at `/metrics`: default process metrics, an HTTP
 * request latency histogram, queue depth and consumer lag gauges, and task counters.
 */
export class Metrics {
  readonly registry = new client.Registry();
  readonly httpDuration: client.Histogram<'method' | 'route' | 'status'>;
  readonly queueDepth: client.Gauge<'queue'>;
  readonly consumerLagSeconds: client.Gauge<'queue'>;
  readonly tasks: client.Counter<'task' | 'outcome'>;

  constructor(service: string) {
    this.registry.setDefaultLabels({ service });
    client.collectDefaultMetrics({ register: this.registry });
    this.httpDuration = new client.Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency in seconds',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
    this.queueDepth = new client.Gauge({
      name: 'bus_queue_depth_messages',
      help: 'Messages ready in a queue',
      labelNames: ['queue'],
      registers: [this.registry],
    });
    this.consumerLagSeconds = new client.Gauge({
      name: 'bus_consumer_lag_seconds',
      help: 'Age of the last message taken from a queue when its handling started',
      labelNames: ['queue'],
      registers: [this.registry],
    });
    this.tasks = new client.Counter({
      name: 'tasks_total',
      help: 'Units of work finished, by task and outcome',
      labelNames: ['task', 'outcome'],
      registers: [this.registry],
    });
  }

  /**
   * Express middleware recording latency per route pattern (not per raw URL, to bound cardinality).
   * `routeLabel(method, path)` names the pattern of a request express did not route itself (the gateway's
   * proxied requests and those its authentication refused: the contract's path, e.g. `/api/servers/:id`);
   * it must return a pattern from a fixed table, never the raw path.
   */
  httpMiddleware(routeLabel?: (method: string, path: string) => string | undefined) {
    return (req: Request, res: Response, next: NextFunction): void => {
      const end = this.httpDuration.startTimer();
      res.on('finish', () => {
        const pattern = req.route ? undefined : routeLabel?.(req.method, (req.originalUrl ?? req.url).split('?')[0]!);
        if (pattern) return void end({ method: req.method, route: pattern, status: String(res.statusCode) });
        const route = (req.route?.path as string | undefined) ?? (res.statusCode === 404 ? 'unmatched' : req.baseUrl || 'other');
        end({ method: req.method, route: `${req.baseUrl}${typeof route === 'string' && route !== req.baseUrl ? route : ''}` || route, status: String(res.statusCode) });
      });
      next();
    };
  }
}
