/**
 * Portable playlists in the UI (issue 34): download an export (M3U8 or JSON) of a playlist or a result list from
 * the selected server, and "add to queue" there. Stream URLs in a download never carry credentials (the
 * `embed_credentials` option of the API is left to explicit API callers).
 */
import { portableRoutes } from '@polyphony/contracts';
import { call, send } from './api';
import { busy, h, say } from './dom';
import { selectedServer } from './state';

/** What to export: one of the playlists polyphony wrote (by name) or ids of a result list. */
export type ExportSource = { playlist: string } | { track_ids: string[] };

/** POST /api/playlists/export on the selected server and hands the answer to the browser as a file download. */
export async function downloadExport(source: ExportSource, format: 'm3u8' | 'json', name?: string): Promise<string> {
  const res = await send(portableRoutes.export, { body: { ...source, format, ...(name ? { name } : {}) } }, { scoped: true });
  const disposition = res.headers.get('content-disposition') ?? '';
  const file = /filename="([^"]+)"/.exec(disposition)?.[1] ?? `playlist.${format}`;
  const url = URL.createObjectURL(await res.blob());
  const a = h('a', { href: url, download: file, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return file;
}

/** POST /api/queue on the selected server; the message to show. */
export async function addToQueue(trackIds: string[]): Promise<string> {
  const r = await call(portableRoutes.queue, { body: { track_ids: trackIds } }, { scoped: true });
  const where = selectedServer()?.name ?? 'the server';
  const how = r.method === 'savePlayQueue' ? 'saved as your play queue' : r.method === 'play_queues' ? `in a new play queue (${r.queue_id})` : `playing on session ${r.queue_id}`;
  return `${r.queued} songs ${how} on ${where}${r.unavailable ? `; ${r.unavailable} not there` : ''}.`;
}

/** "Export M3U8", "Export JSON" and "Add to queue" buttons acting on `source()`, reporting into `out`. */
export function portableButtons(source: () => ExportSource, out: HTMLElement, name?: () => string): HTMLElement {
  const m3u = h('button', { type: 'button', class: 'small', text: 'Export M3U8' });
  const json = h('button', { type: 'button', class: 'small', text: 'Export JSON' });
  const queue = h('button', { type: 'button', class: 'small', text: 'Add to queue' });
  const exporter = (button: HTMLButtonElement, format: 'm3u8' | 'json') => () =>
    void busy(button, out, async () => say(out, `Downloaded ${await downloadExport(source(), format, name?.())}.`, 'ok'));
  m3u.addEventListener('click', exporter(m3u, 'm3u8'));
  json.addEventListener('click', exporter(json, 'json'));
  queue.addEventListener('click', () =>
    void busy(queue, out, async () => {
      const s = source();
      if (!('track_ids' in s)) throw new Error('Add to queue takes a list of songs');
      say(out, await addToQueue(s.track_ids), 'ok');
    }),
  );
  return h('div', { class: 'actions portable' }, m3u, json, queue);
}
