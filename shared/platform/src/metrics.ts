import client from 'prom-client';

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
}
