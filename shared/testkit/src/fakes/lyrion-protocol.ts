/**
 * The LMS JSON-RPC vocabulary of the fake Lyrion (lyrion.ts; media-server-apis.md §5): the command word list
 * (`[cmd, positional…, "tag:value"…]`), the closed-socket failure, `file://` URLs, and the view of the server state
 * the command modules (browse, playlists) read. Internal to the fakes: only `fileUrl` is part of the testkit API
 * (re-exported by lyrion.ts).
 */
import type { FakeCatalogue } from './catalogue';
import type { FakeCore } from './common';

/**
 * How LMS answers an unknown command, bad parameters, a player command without a connected player or failing
 * SQL: it closes the socket without a response. Thrown by a command, turned into `req.socket.destroy()`.
 */
export class CloseSocket extends Error {}

/** What a command answers: the `result` object, or 'sent' when it wrote the response itself. */
export type LyrionAnswer = Record<string, unknown> | 'sent';

/** Percent-encodes a path once, as LMS `file://` URLs are (`#` and `?` too). */
export function fileUrl(path: string): string {
  return `file://${encodeURI(path).replace(/#/g, '%23').replace(/\?/g, '%3F')}`;
}

/** One command of a `slim.request`: its name, positional words and `tag:value` words. */
export interface LyrionCommand {
  name: string;
  positional: string[];
  tagged: Map<string, string>;
}

/**
 * Splits a command array (`params[1]`): the first word is the name; a later word `<letters/underscores>:<value>`
 * is tagged, anything else positional (values are stringified as LMS does).
 */
export function parseCommand(cmd: unknown[]): LyrionCommand {
  const words = cmd.map((c) => String(c));
  const positional: string[] = [];
  const tagged = new Map<string, string>();
  for (const w of words.slice(1)) {
    const colon = w.indexOf(':');
    if (colon > 0 && /^[A-Za-z_]+$/.test(w.slice(0, colon))) tagged.set(w.slice(0, colon), w.slice(colon + 1));
    else positional.push(w);
  }
  return { name: words[0] ?? '', positional, tagged };
}

/**
 * The `start` and `itemsPerResponse` of the extended query format, at `positional[offset]` and the next word
 * (missing = 0). @throws CloseSocket when either is not a non-negative integer
 */
export function startCount(positional: string[], offset = 0): [number, number] {
  const s = Number(positional[offset] ?? 0);
  const c = Number(positional[offset + 1] ?? 0);
  if (!Number.isInteger(s) || !Number.isInteger(c) || s < 0 || c < 0) throw new CloseSocket();
  return [s, c];
}

/** The fake server's state as the command modules read it (live: knobs changed after construction apply). */
export interface LyrionView {
  readonly catalogue: FakeCatalogue;
  readonly core: FakeCore;
  readonly virtualLibraries: boolean;
  readonly failMode: 'status500' | 'close';
  readonly maxTrackIdsPerCommand: number | null;
  /** True when `player` is a connected player's id. */
  hasPlayer(player: string): boolean;
  /** A number as the server sends it (a string with `stringNumbers`); undefined stays undefined. */
  n(v: number | undefined): number | string | undefined;
  /** The key/value pairs `tags` select for catalogue track `i` (§5.4 tag table). */
  trackFields(i: number, tags: string): Record<string, unknown>;
  /** 1-based LMS artist id of a catalogue artist id (0 when unknown). */
  artistNo(id: string): number;
  /** Virtual library id (8 hex) of a catalogue library. */
  libraryIdOf(libraryId: string): string;
  /** Catalogue index of a track URL (`file://…`, `db:track.id=<n>`, `lms://track/<n>`), or undefined. */
  indexByUrl(url: string): number | undefined;
}
