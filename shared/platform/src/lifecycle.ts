import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import net from 'node:net';
import type { Logger } from './logger';
import { readEnv } from './config';
import { handleClientErrors } from './http';

/** What a composition root returns: an HTTP app plus start/stop of consumers and connections. */
export interface ServiceUnit {
  name: string;
  http: import('express').Express;
  /** Connect, check schema, start consumers. */
  start(): Promise<void>;
  /** Stop consuming, finish in-flight work, close connections. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Listens on `port` (0 = any) on `host`; resolves with the server and the bound port. HTTP parser
 * errors (a request line or headers above Node's 16 KiB limit, which a long query forwarded by the
 * gateway can reach) are answered in the common error shape (`handleClientErrors`). `app` is an express
 * app or any request listener (a service's request pipeline: `ServiceRuntime.handler`).
 */
export function listen(app: import('node:http').RequestListener, port: number, host = '0.0.0.0'): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createServer(app).listen(port, host);
    handleClientErrors(server);
    server.once('listening', () => {
      const addr = server.address();
      resolve({ server, port: typeof addr === 'object' && addr ? addr.port : port });
    });
    server.once('error', reject);
  });
}

/**
 * Starts draining `server` (a graceful stop): every answer from now on carries `Connection: close`, so a client that
 * kept its connection alive sends its next request on a new connection (refused once the listener is closed: a load
 * balancer or the gateway's pool sends it to another replica at once) instead of on a socket this process is about to
 * cut, and connections idle at this moment are closed. Node's `server.close()` alone keeps serving a busy keep-alive
 * connection for as long as its client keeps sending (measured: 60 requests in 3.5 s after close on one socket, each
 * answered `Connection: keep-alive`), so a stop then ends in `closeAllConnections` resetting requests in flight
 * (issue 36: the rolling restart of the gateways). Idempotent.
 */
export function drainConnections(server: Server | HttpsServer): void {
  if (draining.has(server)) return;
  draining.add(server);
  server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    if (!res.headersSent) res.setHeader('connection', 'close');
  });
  server.closeIdleConnections?.();
}
const draining = new WeakSet<Server | HttpsServer>();

/**
 * Closes an HTTP server: stops accepting, drains kept-alive connections ({@link drainConnections}: each busy one
 * answers its current request, then at most one more with `Connection: close`), lets in-flight requests finish (up to
 * `graceMs`, then the remaining connections are cut).
 */
export function closeServer(server: Server, graceMs = 10_000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.closeAllConnections?.();
      resolve();
    }, graceMs);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    drainConnections(server);
  });
}

/**
 * Keeps a service process alive through a promise rejection nobody handled. Node's default
 * (`--unhandled-rejections=throw`) exits the process with code 1, so one forgotten `.catch` on a
 * call that fails while the database or broker is away would take a worker down (seen in the fault
 * suite: a pg `connect ECONNREFUSED` during a 60 s PostgreSQL outage exited an analysis worker).
 * The rejection is a bug to fix: it is logged at error level with its stack and counted, and the
 * process goes on (every request and message path has its own error handling; nothing is left
 * half-done by ignoring a rejection that no code was waiting for). Uncaught synchronous exceptions
 * keep Node's default (exit), as the process state after one is unknown. Installed once per process.
 */
export function guardUnhandledRejections(logger: Logger): void {
  if (rejectionGuardInstalled) return;
  rejectionGuardInstalled = true;
  process.on('unhandledRejection', (reason: unknown) => {
    unhandledRejections++;
    const err = reason instanceof Error ? { message: reason.message, stack: reason.stack, code: (reason as { code?: unknown }).code } : { value: String(reason) };
    logger.error('unhandled promise rejection (kept running; this is a bug)', { err });
  });
}
let rejectionGuardInstalled = false;
let unhandledRejections = 0;
/** Rejections the guard has logged in this process (tests). */
export function unhandledRejectionCount(): number {
  return unhandledRejections;
}

/**
 * Wires SIGTERM and SIGINT to `shutdown` once (and installs {@link guardUnhandledRejections}): a second signal forces exit. Exit code 0 after a
 * clean stop, 1 when stopping threw. The stop is bounded by `SHUTDOWN_TIMEOUT_MS` (default 25000, to
 * stay below Kubernetes' default 30 s grace period): past it the process exits 1 and the broker
 * hands unacknowledged messages to another consumer.
 */
export function onShutdownSignal(logger: Logger, shutdown: () => Promise<void>, timeoutMs = Number(readEnv().SHUTDOWN_TIMEOUT_MS) || 25_000): void {
  guardUnhandledRejections(logger);
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn('second signal, exiting now', { signal });
      process.exit(1);
    }
    stopping = true;
    logger.info('shutting down', { signal });
    setTimeout(() => {
      logger.error('graceful stop took too long, exiting', { timeoutMs });
      process.exit(1);
    }, timeoutMs).unref();
    shutdown().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error('shutdown failed', { err });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

/** A free TCP port on 127.0.0.1 (bound, then released; callers retry if another process takes it first). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** What {@link runServiceMain} starts: a service built by its composition root (build*(config)). */
export interface RunnableService {
  runtime: { logger: Logger };
  start(): Promise<void>;
  listen(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * The process entry of a service (its main.ts): builds it, starts it (migrations, broker, consumers),
 * listens on its configured port, logs `<name> listening` and wires the shutdown signals
 * ({@link onShutdownSignal}). A failure to build or start prints the message and exits 1 (the
 * orchestrator restarts the process).
 */
export function runServiceMain(name: string, build: () => RunnableService): void {
  const main = async (): Promise<void> => {
    const svc = build();
    await svc.start();
    const port = await svc.listen();
    svc.runtime.logger.info(`${name} listening`, { port });
    onShutdownSignal(svc.runtime.logger, () => svc.stop());
  };
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
