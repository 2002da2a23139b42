import 'reflect-metadata';
import { createLogger } from '@polyphony/platform';
import { startStack } from '@polyphony/standalone';

/**
 * The standalone stack in a process of its own, for the soak (soak.ts): argv[2] is a JSON
 * `{databaseUrl, amqpUrl, env}`; prints `{"port": <gateway port>, "pid": <pid>}` once it serves, stops on SIGTERM.
 */
async function main(): Promise<void> {
  const { databaseUrl, amqpUrl, env } = JSON.parse(process.argv[2]!) as { databaseUrl: string; amqpUrl?: string; env: Record<string, string> };
  const stack = await startStack({ databaseUrl, amqpUrl, port: 0, host: '127.0.0.1', env, logger: createLogger({ service: 'soak', level: 'warn' }) });
  process.stdout.write(`${JSON.stringify({ port: stack.port, pid: process.pid })}\n`);
  process.once('SIGTERM', () => {
    void stack.stop().then(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  console.error((err as Error).stack ?? String(err));
  process.exit(1);
});
