/**
 * Recording search (PER SERVER, issue 33): record a clip from the microphone (MediaRecorder, a level meter from
 * a Web Audio AnalyserNode, a countdown; 10 s by default) or choose a file, send it to
 * POST /api/recording_search/search (multipart `clip`), and show the identified song of the selected server with
 * where the clip starts in it and the evidence (votes, lead, score), or "no match"; from the song, one click to
 * Similar songs, a Song path starting from it, or an Instant playlist. Browsers give the microphone to HTTPS
 * pages and localhost only: elsewhere the page says so and points to the README (HTTPS, self-signed option).
 */
import { recordingRoutes, type RecordingSearchResponse, type RecordingStatus } from '@polyphony/contracts';
import { call } from '../api';
import { busy, errText, field, h, msg, say, select, table } from '../dom';
import type { Page } from '../page';
import { clipFileOf, describeResult, followUpLinks, fmtOffset, meterFraction, pickRecorderType, rmsDbfs, secondsLeft } from '../recording-logic';
import { serverParam } from '../state';
import { trackLabel } from '../track-format';

/** The multipart body of a search: `clip` (the file) and `n_results`, as a Blob with its boundary-carrying type. */
async function multipartOf(file: Blob, name: string, nResults: number): Promise<{ body: Blob; contentType: string }> {
  const form = new FormData();
  form.append('n_results', String(nResults));
  form.append('clip', file, name);
  const req = new Request(location.href, { method: 'POST', body: form });
  return { body: await req.blob(), contentType: req.headers.get('content-type') ?? 'multipart/form-data' };
}

const page: Page = {
  title: 'Recording search',
  tag: 'PER SERVER',
  render(root) {
    const status = msg();
    const out = msg();
    const result = h('section', { class: 'recording-result', 'aria-live': 'polite', 'aria-label': 'Result' });
    const length = select(
      [5, 10, 15, 20, 30].map((s): [string, string] => [String(s), `${s} seconds`]),
      '10',
    );
    const recordButton = h('button', { type: 'button', class: 'primary', text: 'Record' });
    const stopButton = h('button', { type: 'button', text: 'Stop and identify', hidden: true });
    const meterBar = h('div', { class: 'level-bar' });
    const meter = h('div', { class: 'level', role: 'meter', 'aria-label': 'Microphone level', 'aria-valuemin': '-70', 'aria-valuemax': '0', 'aria-valuenow': '-70' }, meterBar);
    const meterText = h('span', { class: 'level-text muted', text: '— dBFS' });
    const countdown = h('span', { class: 'countdown', 'aria-live': 'polite', text: '' });
    const fileInput = h('input', { type: 'file', accept: 'audio/*,video/webm,video/mp4,.webm,.ogg,.opus,.m4a,.mp4,.wav,.mp3,.flac' });
    const uploadButton = h('button', { type: 'button', text: 'Identify file', disabled: true });
    fileInput.addEventListener('change', () => (uploadButton.disabled = !fileInput.files?.length));

    let stream: MediaStream | undefined;
    let audio: AudioContext | undefined;
    let recorder: MediaRecorder | undefined;
    let frame = 0;
    let ticker: ReturnType<typeof setInterval> | undefined;
    let abort: AbortController | undefined;
    let left = false;

    /** Releases the microphone and the audio graph (after a recording, and when the page is left). */
    const release = () => {
      cancelAnimationFrame(frame);
      clearInterval(ticker);
      stream?.getTracks().forEach((t) => t.stop());
      stream = undefined;
      void audio?.close().catch(() => undefined);
      audio = undefined;
      meterBar.style.width = '0';
      meter.setAttribute('aria-valuenow', '-70');
      meterText.textContent = '— dBFS';
      countdown.textContent = '';
      stopButton.hidden = true;
      recordButton.hidden = false;
    };

    const showStatus = (s: RecordingStatus) => {
      if (s.status === 'ready') say(status, `${s.available_songs} songs of this server can be recognised (${s.fingerprinted_songs} of ${s.total_songs} songs fingerprinted).`);
      else if (s.status === 'empty') say(status, 'No song has a recording fingerprint yet: run an analysis first (songs analysed before get one on the next run).', 'error');
      else say(status, 'Loading the fingerprints of the library…');
    };

    const search = async (file: Blob, name: string) => {
      abort?.abort();
      abort = new AbortController();
      say(out, 'Identifying…');
      result.replaceChildren();
      const raw = await multipartOf(file, name, 10);
      const server = serverParam();
      const r: RecordingSearchResponse = await call(recordingRoutes.search, { query: server ? { server } : {} }, { raw, signal: abort.signal });
      if (left) return;
      const d = describeResult(r.results);
      say(out, `Clip of ${r.clip_seconds.toFixed(1)} s at ${r.clip_level_db.toFixed(0)} dBFS.`, d.identified ? 'ok' : 'info');
      const heading = h('h2', { class: d.identified ? 'identified' : 'no-match', text: d.identified ? `Identified: ${d.headline}` : d.headline });
      const parts: Array<Node> = [heading, h('p', { class: 'muted', text: d.detail })];
      if (d.identified) {
        const links = followUpLinks(d.identified);
        parts.push(
          h(
            'div',
            { class: 'toolbar follow-ups' },
            h('a', { class: 'button', href: links.similar, text: 'Similar songs' }),
            h('a', { class: 'button', href: links.path, text: 'Song path from it' }),
            h('a', { class: 'button', href: links.playlist, text: 'Instant playlist' }),
          ),
        );
      }
      if (r.results.length > (d.identified ? 1 : 0)) {
        parts.push(
          table(
            d.identified ? 'Other candidates' : 'Nearest candidates',
            ['Song', 'Starts at', 'Votes', 'Lead', 'Score'],
            r.results.slice(d.identified ? 1 : 0, 6).map((row) => [trackLabel(row), fmtOffset(row.offset_seconds), String(row.votes), String(row.lead), row.score.toFixed(2)]),
            { class: 'compact' },
          ),
        );
      }
      result.replaceChildren(...parts);
    };

    const record = async () => {
      if (!navigator.mediaDevices?.getUserMedia || typeof MediaRecorder === 'undefined') {
        throw new Error(window.isSecureContext ? 'This browser cannot record audio: choose a file instead.' : 'The browser allows the microphone only on HTTPS or localhost: open polyphony over HTTPS (README: "HTTPS") or choose a file.');
      }
      const seconds = Number(length.value);
      // Raw sound: echo cancellation, noise suppression and gain control are made for voices and damage music.
      stream = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false } });
      if (left) return release();
      audio = new AudioContext();
      const analyser = audio.createAnalyser();
      analyser.fftSize = 2048;
      audio.createMediaStreamSource(stream).connect(analyser);
      const block = new Float32Array(analyser.fftSize);
      const draw = () => {
        analyser.getFloatTimeDomainData(block);
        const db = rmsDbfs(block);
        meterBar.style.width = `${(100 * meterFraction(db)).toFixed(1)}%`;
        meter.setAttribute('aria-valuenow', db.toFixed(0));
        meterText.textContent = `${db.toFixed(0)} dBFS`;
        frame = requestAnimationFrame(draw);
      };
      draw();
      const type = pickRecorderType((t) => MediaRecorder.isTypeSupported(t));
      recorder = new MediaRecorder(stream, type ? { mimeType: type } : {});
      const chunks: Blob[] = [];
      recorder.addEventListener('dataavailable', (e) => {
        if (e.data.size) chunks.push(e.data);
      });
      const stopped = new Promise<void>((resolve) => recorder!.addEventListener('stop', () => resolve(), { once: true }));
      const started = performance.now();
      const stop = () => {
        if (recorder?.state === 'recording') recorder.stop();
      };
      recorder.start(1000);
      recordButton.hidden = true;
      stopButton.hidden = false;
      stopButton.onclick = stop;
      const tick = () => {
        const n = secondsLeft(seconds, performance.now() - started);
        countdown.textContent = n > 0 ? `Recording… ${n} s left` : 'Finishing…';
        if (n <= 0) stop();
      };
      tick();
      ticker = setInterval(tick, 100);
      say(out, 'Hold the device near the speaker.');
      await stopped;
      const recordedType = recorder.mimeType || type;
      release();
      if (left) return;
      const { type: fileType, name } = clipFileOf(recordedType);
      await search(new Blob(chunks, { type: fileType }), name);
    };

    recordButton.addEventListener('click', () =>
      void busy(recordButton, out, async () => {
        try {
          await record();
        } catch (err) {
          release();
          const name = err instanceof DOMException ? err.name : '';
          if (name === 'NotAllowedError') throw new Error('The microphone was refused: allow it for this site in the browser, or choose a file.');
          if (name === 'NotFoundError') throw new Error('No microphone found: choose a file instead.');
          throw err;
        }
      }),
    );
    uploadButton.addEventListener('click', () =>
      void busy(uploadButton, out, async () => {
        const f = fileInput.files?.[0];
        if (f) await search(f, f.name || 'clip');
      }),
    );

    const secureHint = window.isSecureContext ? null : h('p', { class: 'msg msg-error', role: 'alert', text: 'This page is not on HTTPS: the browser will not give it the microphone. Open polyphony over HTTPS (README: "HTTPS") or choose a file.' });
    root.append(
      h('p', { class: 'muted', text: 'Hold your phone or computer near a song playing in the room: the song of this server is recognised from a few seconds of sound, even with noise or a small speaker.' }),
      status,
      ...(secureHint ? [secureHint] : []),
      h('fieldset', { class: 'recorder' }, h('legend', { text: 'Microphone' }), h('div', { class: 'toolbar' }, field('Length', length), recordButton, stopButton), h('div', { class: 'level-row' }, meter, meterText, countdown)),
      h('fieldset', {}, h('legend', { text: 'Or a recorded file' }), h('div', { class: 'toolbar' }, field('Audio file (WebM, Ogg, M4A, WAV, MP3)', fileInput), uploadButton)),
      out,
      result,
    );

    const server = serverParam();
    const scope = server ? { server } : {};
    call(recordingRoutes.status, { query: scope })
      .then(async (s) => {
        if (left) return;
        showStatus(s);
        if (s.status === 'not_loaded' || s.status === 'loading') showStatus(await call(recordingRoutes.warmup, { query: scope, body: {} }));
      })
      .catch((err: unknown) => {
        if (!left) say(status, errText(err), 'error');
      });

    return () => {
      left = true;
      abort?.abort();
      if (recorder?.state === 'recording') recorder.stop();
      release();
    };
  },
};
export default page;
