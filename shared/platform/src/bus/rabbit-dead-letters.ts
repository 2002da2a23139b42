/**
 * Dead letters of the RabbitMQ bus (rabbit.ts): reading `<queue>.dlq` without taking messages away, and replaying
 * them into `<queue>`. Both work on a channel of their own that the caller opens and closes (`basic.get` without
 * ack: whatever is not acked is requeued in place when that channel closes).
 */
import { createHash } from 'node:crypto';
import type { Channel, Message, Options } from 'amqplib';
import { attemptOf, INTERNAL_HEADERS } from './common';
import type { DeadLetterInfo } from './types';

/** A dead letter's description from its AMQP properties (x-death gives the first routing key). */
export function describeDeadLetter(queue: string, msg: Message): DeadLetterInfo {
  const headers = (msg.properties.headers ?? {}) as Record<string, unknown>;
  const deaths = Array.isArray(headers['x-death']) ? (headers['x-death'] as Array<{ 'routing-keys'?: string[] }>) : [];
  const routingKey = typeof headers['x-routing-key'] === 'string' ? headers['x-routing-key'] : (deaths[deaths.length - 1]?.['routing-keys']?.[0] ?? msg.fields.routingKey);
  const text = msg.content.toString('utf8');
  let payload: unknown = text;
  try {
    payload = JSON.parse(text);
  } catch {
    /* keep the text */
  }
  return {
    queue,
    messageId: typeof msg.properties.messageId === 'string' ? msg.properties.messageId : `sha256:${createHash('sha256').update(msg.content).digest('hex')}`,
    routingKey,
    attempt: attemptOf(headers),
    error: typeof headers['x-last-error'] === 'string' ? headers['x-last-error'] : undefined,
    payload,
  };
}

/** Up to `limit` messages of `<queue>.dlq`, described; none acked (they go back when `ch` closes). */
export async function readDeadLetters(ch: Channel, queue: string, limit: number): Promise<DeadLetterInfo[]> {
  const out: DeadLetterInfo[] = [];
  while (out.length < limit) {
    const msg = await ch.get(`${queue}.dlq`, { noAck: false });
    if (!msg) break;
    out.push(describeDeadLetter(queue, msg));
  }
  return out;
}

/**
 * Moves up to `limit` messages of `<queue>.dlq` (only `messageIds` when given) back into `<queue>` with `republish`
 * (the bus's confirmed publish to `queue` through the default exchange), with `attempt` 1 and the original routing key
 * in `x-routing-key`; each is acked in the DLQ only after `republish` resolved. Messages not selected stay unacked
 * (given back when `ch` closes). A message seen twice ends the walk (the whole queue was seen).
 * @returns messages moved
 */
export async function replayDeadLetterQueue(ch: Channel, queue: string, limit: number, messageIds: ReadonlySet<string> | undefined, republish: (content: Buffer, props: Options.Publish) => Promise<void>): Promise<number> {
  let moved = 0;
  const seen = new Set<string>();
  while (moved < limit) {
    const msg = await ch.get(`${queue}.dlq`, { noAck: false });
    if (!msg) break;
    const info = describeDeadLetter(queue, msg);
    // A message seen twice means the whole queue was walked (unselected ones are requeued at the head).
    if (seen.has(info.messageId)) {
      ch.nack(msg, false, true);
      break;
    }
    seen.add(info.messageId);
    if (messageIds && !messageIds.has(info.messageId)) continue; // stays unacked, requeued when the channel closes
    const headers: Record<string, unknown> = {};
    for (const [k, v] of Object.entries((msg.properties.headers ?? {}) as Record<string, unknown>)) if (!INTERNAL_HEADERS.has(k)) headers[k] = v;
    headers.attempt = 1;
    headers['x-routing-key'] = info.routingKey;
    await republish(msg.content, {
      persistent: true,
      contentType: msg.properties.contentType as string | undefined,
      messageId: info.messageId,
      headers,
    });
    ch.ack(msg);
    moved++;
  }
  return moved;
}
