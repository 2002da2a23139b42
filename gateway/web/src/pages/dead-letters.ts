/**
 * Dead letters (CATALOGUE, admin): messages every retry gave up on, per work queue
 * (GET /api/tasks/dead-letters), and replay (POST /api/tasks/dead-letters/replay) of one queue,
 * of chosen messages, or of all. Payloads are shown as sent on the bus (no secrets travel there).
 */
import { taskRoutes } from '@polyphony/contracts';
import { call } from '../api';
import { busy, errText, h, msg, say, section } from '../dom';
import type { Page } from '../page';

interface Letter {
  messageId: string;
  routingKey?: string;
  attempt?: number;
  error?: string;
  payload?: unknown;
}
interface QueueLetters {
  queue: string;
  count: number;
  messages: Letter[];
}

const page: Page = {
  title: 'Dead letters',
  tag: 'CATALOGUE',
  admin: true,
  render(root) {
    const out = msg();
    const list = h('div', {}, h('p', { class: 'muted', text: 'Loading…' }));
    const replayAll = h('button', { type: 'button', text: 'Replay all' });
    replayAll.addEventListener('click', () => busy(replayAll, out, () => replay({})));
    const replay = async (body: { queue?: string; message_ids?: string[] }) => {
      const r = (await call(taskRoutes.deadLettersReplay, { body })) as { total?: number } | null;
      say(out, `${r?.total ?? 0} messages put back in their queue.`, 'ok');
      await load();
    };
    const load = async () => {
      const r = (await call(taskRoutes.deadLetters, {})) as { queues?: QueueLetters[] } | null;
      const queues = (r?.queues ?? []).filter((q) => q.count > 0);
      replayAll.disabled = queues.length === 0;
      list.replaceChildren(
        ...(queues.length
          ? queues.map((q) => {
              const chosen = new Set<string>();
              const replayQueue = h('button', { type: 'button', class: 'small', text: `Replay ${q.queue}` });
              replayQueue.addEventListener('click', () => busy(replayQueue, out, () => replay({ queue: q.queue })));
              const replayChosen = h('button', { type: 'button', class: 'small', text: 'Replay selected', disabled: true });
              replayChosen.addEventListener('click', () => busy(replayChosen, out, () => replay({ queue: q.queue, message_ids: [...chosen] })));
              return section(
                `${q.queue} (${q.count})`,
                h('div', { class: 'toolbar' }, replayQueue, replayChosen),
                h(
                  'ul',
                  { class: 'plain' },
                  q.messages.map((m) => {
                    const box = h('input', { type: 'checkbox', 'aria-label': `Select message ${m.messageId}` });
                    box.addEventListener('change', () => {
                      if (box.checked) chosen.add(m.messageId);
                      else chosen.delete(m.messageId);
                      replayChosen.disabled = chosen.size === 0;
                    });
                    return h('li', {}, h('label', { class: 'check' }, box, `${m.routingKey ?? ''} · attempt ${m.attempt ?? '?'} · ${m.error ?? ''}`), h('details', {}, h('summary', { text: 'Payload' }), h('pre', { class: 'log', text: JSON.stringify(m.payload, null, 1) })));
                  }),
                ),
              );
            })
          : [h('p', { class: 'muted', text: 'No dead letters: every message was handled.' })]),
      );
    };
    root.append(h('div', { class: 'toolbar' }, replayAll), out, list);
    load().catch((err: unknown) => say(out, errText(err), 'error'));
  },
};
export default page;
