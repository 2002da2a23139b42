/**
 * Instant playlist (PER SERVER): describe a playlist in words; the answer streams in
 * (POST /chat/api/chatPlaylistStream: `log` frames, then `done` or `error`), the songs
 * are previewed and can be saved on the selected server (POST /chat/api/create_playlist). A link may carry the
 * request (`#/chat?prompt=…`, from Recording search): it is filled in and sent at once.
 */
import { chatRoutes, CHAT_INPUT_MAX, type ChatPlaylistResponse, type ChatStreamFrame } from '@polyphony/contracts';
import type { z } from 'zod';
import { send } from '../api';
import { busy, field, h, msg, numberInput, say } from '../dom';
import type { Page } from '../page';
import { SseParser } from '../sse';
import { playlistSaver, trackTable } from '../tracks';

type Result = z.infer<typeof ChatPlaylistResponse>;

const page: Page = {
  title: 'Instant playlist',
  tag: 'PER SERVER',
  render(root, { params }) {
    const input = h('textarea', { rows: '3', maxlength: String(CHAT_INPUT_MAX), required: true, placeholder: 'e.g. calm acoustic songs for a rainy evening' });
    const n = numberInput(25, 1, 100);
    const ask = h('button', { type: 'submit', class: 'primary', text: 'Create playlist' });
    const statusLine = msg();
    const log = h('div', { class: 'chat-log', 'aria-live': 'polite' });
    const results = h('div');
    let songs: Result['response']['query_results'] = [];
    let lastPrompt = '';
    const saver = playlistSaver(() => songs.map((s) => s.item_id), () => lastPrompt.slice(0, 60) || 'Instant playlist', { chat: true });
    const form = h('form', {}, field('Describe the playlist', input), h('div', { class: 'toolbar' }, field('Songs', n), ask));
    let abort: AbortController | undefined;
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      lastPrompt = text;
      abort?.abort();
      abort = new AbortController();
      const signal = abort.signal;
      void busy(ask, statusLine, async () => {
        log.append(h('div', { class: 'chat-msg me', text }));
        const answer = h('div', { class: 'chat-msg', text: '' });
        log.append(answer);
        results.replaceChildren();
        saver.show(false);
        say(statusLine, 'Thinking…');
        const res = await send(chatRoutes.chatPlaylistStream, { body: { userInput: text, n: Number(n.value) } }, { scoped: true, signal });
        const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
        const parser = new SseParser();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const ev of parser.push(value)) {
            const frame = JSON.parse(ev.data) as ChatStreamFrame;
            if (frame.type === 'log' && frame.kind === 'status') say(statusLine, frame.message);
            else if (frame.type === 'log') answer.textContent += frame.message;
            else if (frame.type === 'error') throw new Error(frame.error || 'The playlist could not be made');
            else if (frame.type === 'done') {
              const r = frame.response;
              songs = r.query_results;
              if (!answer.textContent) answer.textContent = r.message;
              say(statusLine, `${songs.length} songs · ${r.ai_provider_used === 'NONE' ? 'rule-based interpreter' : `${r.ai_provider_used}${r.ai_model_used ? ` (${r.ai_model_used})` : ''}`}`, 'ok');
              results.replaceChildren(songs.length ? trackTable('Preview', songs) : h('p', { class: 'muted', text: 'No songs matched on this server.' }));
              saver.show(songs.length > 0);
            }
          }
        }
      });
    });
    root.append(form, statusLine, log, results, saver.element);
    const linked = params.get('prompt');
    if (linked) {
      input.value = linked.slice(0, CHAT_INPUT_MAX);
      form.requestSubmit();
    }
    return () => abort?.abort();
  },
};
export default page;
