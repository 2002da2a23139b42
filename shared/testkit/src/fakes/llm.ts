/**
 * A fake LLM server speaking the protocols polyphony's adapters use, scripted per test:
 * - OpenAI chat completions (also Mistral's): `POST /v1/chat/completions` with `tools` and
 *   `tool_calls`, and `stream: true` as server-sent events (`data: {chunk}` ... `data: [DONE]`);
 * - Ollama native: `POST /api/chat` (`message.tool_calls[].function.arguments` as an object);
 * - Gemini: `POST /v1beta/models/{model}:generateContent` (`functionCall` / `functionResponse` parts).
 *
 * Each request consumes the next scripted {@link FakeTurn} (the last one repeats when the script
 * runs out, so a "model that loops" is one turn). Requests are recorded with their bodies.
 */
import express, { type Express, type Request, type Response } from 'express';
import { FakeCore, newApp, recordBody, type StartedFake } from './common';

/** One scripted model answer. */
export interface FakeTurn {
  /** Text content of the answer. */
  content?: string;
  /** Tool calls; `arguments` is sent verbatim when a string (malformed JSON allowed), else serialised. */
  toolCalls?: Array<{ name: string; arguments: string | Record<string, unknown> }>;
  /** Answer this HTTP status with an error body instead. */
  status?: number;
  /** Wait this long before answering (timeouts). */
  delayMs?: number;
  /** Answer 200 with a body that is not the protocol's shape. */
  malformed?: boolean;
}

export class FakeLlm {
  readonly core = new FakeCore();
  readonly app: Express;
  private script: FakeTurn[] = [];
  private cursor = 0;

  constructor() {
    this.app = this.build();
  }

  /** Replaces the script and rewinds it. */
  setScript(turns: FakeTurn[]): void {
    this.script = turns;
    this.cursor = 0;
  }

  /** Bodies of the requests received so far. */
  get bodies(): Array<Record<string, unknown>> {
    return this.core.requests.filter((r) => r.method === 'POST').map((r) => r.body as Record<string, unknown>);
  }

  start(): Promise<StartedFake> {
    return this.core.listen(this.app);
  }

  private next(): FakeTurn {
    const turn = this.script[Math.min(this.cursor, this.script.length - 1)] ?? { content: '' };
    this.cursor++;
    return turn;
  }

  private async take(req: Request, res: Response): Promise<FakeTurn | undefined> {
    recordBody(res, req.body);
    const turn = this.next();
    if (turn.delayMs) await new Promise((r) => setTimeout(r, turn.delayMs));
    if (res.destroyed || req.destroyed) return undefined;
    if (turn.status) {
      res.status(turn.status).json({ error: { message: `scripted ${turn.status}`, type: 'scripted', code: turn.status } });
      return undefined;
    }
    if (turn.malformed) {
      res.status(200).json({ unexpected: true });
      return undefined;
    }
    return turn;
  }

  private build(): Express {
    const app = newApp(this.core);
    app.use(express.json({ limit: '5mb' }));
    const args = (a: string | Record<string, unknown>) => (typeof a === 'string' ? a : JSON.stringify(a));

    app.post('/v1/chat/completions', async (req, res) => {
      const turn = await this.take(req, res);
      if (!turn) return;
      const toolCalls = (turn.toolCalls ?? []).map((c, i) => ({ id: `call_${this.cursor}_${i}`, type: 'function', function: { name: c.name, arguments: args(c.arguments) } }));
      if (req.body?.stream) {
        res.setHeader('content-type', 'text/event-stream');
        const send = (obj: unknown) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
        const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 0, model: req.body.model };
        for (const word of (turn.content ?? '').split(/(?<= )/)) if (word) send({ ...base, choices: [{ index: 0, delta: { content: word }, finish_reason: null }] });
        toolCalls.forEach((c, index) => send({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments } }] }, finish_reason: null }] }));
        send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: toolCalls.length ? 'tool_calls' : 'stop' }] });
        res.end('data: [DONE]\n\n');
        return;
      }
      res.json({
        id: 'chatcmpl-fake',
        object: 'chat.completion',
        created: 0,
        model: req.body?.model,
        choices: [{ index: 0, message: { role: 'assistant', content: turn.content ?? (toolCalls.length ? null : ''), ...(toolCalls.length ? { tool_calls: toolCalls } : {}) }, finish_reason: toolCalls.length ? 'tool_calls' : 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      });
    });

    app.post('/api/chat', async (req, res) => {
      const turn = await this.take(req, res);
      if (!turn) return;
      res.json({
        model: req.body?.model,
        created_at: new Date(0).toISOString(),
        message: { role: 'assistant', content: turn.content ?? '', ...(turn.toolCalls?.length ? { tool_calls: turn.toolCalls.map((c) => ({ function: { name: c.name, arguments: typeof c.arguments === 'string' ? safeParse(c.arguments) : c.arguments } })) } : {}) },
        done: true,
      });
    });

    app.post(/^\/v1beta\/models\/([^/:]+):generateContent$/, async (req, res) => {
      const turn = await this.take(req, res);
      if (!turn) return;
      const parts = turn.toolCalls?.length ? turn.toolCalls.map((c) => ({ functionCall: { name: c.name, args: typeof c.arguments === 'string' ? safeParse(c.arguments) : c.arguments } })) : [{ text: turn.content ?? '' }];
      res.json({ candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 } });
    });
    return app;
  }
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function createFakeLlm(): FakeLlm {
  return new FakeLlm();
}
