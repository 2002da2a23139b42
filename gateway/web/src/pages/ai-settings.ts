/** The AI provider part of Setup: the AI settings (provider, URLs, models, keys) and a test button (POST /api/config/ai/test). */
import { chatRoutes } from '@polyphony/contracts';
import { call } from '../api';
import { busy, h, msg, say, section } from '../dom';
import { settingsForm } from '../settings-form';

const AI_KEY = /^(AI_|OPENAI_|OLLAMA_|GEMINI_|MISTRAL_)/;

/** Section "AI provider": settings form over the AI keys plus "Test AI provider". */
export function aiSettings(): HTMLElement {
  const out = msg();
  const test = h('button', { type: 'button', text: 'Test AI provider' });
  test.addEventListener('click', () =>
    busy(test, out, async () => {
      say(out, 'Asking the model…');
      const r = await call(chatRoutes.aiTest, {});
      if (r.ok) say(out, `${r.provider}${r.model ? ` (${r.model})` : ''} answered in ${Math.round(r.latency_ms)} ms.`, 'ok');
      else say(out, `${r.provider} test failed: ${r.error ?? 'no answer'}`, 'error');
    }),
  );
  return section(
    'AI provider',
    h('p', { class: 'muted', text: 'Used by the Instant playlist chat and to name clustering playlists. NONE uses the built-in rule-based interpreter.' }),
    settingsForm({ filter: (s) => AI_KEY.test(s.key), extra: [test] }),
    out,
  );
}
