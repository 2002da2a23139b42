import type { ServerType } from '@polyphony/media-servers';

/** A registry row as the domain sees it (credentials in clear: never leaves the service unmasked). */
export interface MusicServer {
  id: string;
  name: string;
  type: ServerType;
  creds: Record<string, string>;
  musicLibraries: string[];
  isDefault: boolean;
  trackCount: number | null;
  matchedCount: number | null;
  /** Change detection (issue 35): mode, seconds between probes, sha256 of the push token (null: none set). */
  changeDetection: { mode: 'off' | 'poll' | 'push'; intervalSeconds: number; pushTokenSha256: string | null };
  createdAt: Date;
  updatedAt: Date;
}
