/**
 * Minimal Ogg Vorbis header reader: tags (Vorbis comments) and exact duration, without decoding audio.
 *
 * Sources: Ogg page layout from RFC 3533 section 6 (capture pattern "OggS", 27-byte header,
 * 64-bit granule position at byte 6, segment table at byte 27); packet layout from the
 * Vorbis I specification sections 4.2 (identification header: type 1, "vorbis", version,
 * channels, 32-bit LE sample rate) and 5 (comment header: type 3, "vorbis", vendor string,
 * then `KEY=value` UTF-8 entries with case-insensitive keys). For Vorbis the granule position of
 * the last page is the total number of PCM samples per channel, so duration = granule / rate.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** What {@link readOggVorbisInfo} extracts from a file. */
export interface OggVorbisInfo {
  /** Sample rate in Hz (identification header). */
  sampleRate: number;
  /** Channel count (identification header). */
  channels: number;
  /** Duration in seconds (float): last granule position / sample rate. */
  durationSeconds: number;
  /** Vorbis comments with keys upper-cased (Vorbis comment keys are case-insensitive). First value wins. */
  tags: Record<string, string>;
  /** File size in bytes. */
  sizeBytes: number;
}

const HEADER_LEN = 27;

function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  const n = readSync(fd, buf, 0, length, position);
  return buf.subarray(0, n);
}

/**
 * Reads the first three Vorbis packets' worth of pages (identification + comment) starting at
 * offset 0, reassembling packets that span pages (lacing value 255 continues a packet).
 * Reads at most `maxBytes` (default 4 MiB) to bound memory on files with huge embedded art.
 */
function readHeaderPackets(fd: number, fileSize: number, maxBytes = 4 * 1024 * 1024): Buffer[] {
  const packets: Buffer[] = [];
  let current: Buffer[] = [];
  let pos = 0;
  while (packets.length < 2 && pos < Math.min(fileSize, maxBytes)) {
    const head = readAt(fd, pos, HEADER_LEN);
    if (head.length < HEADER_LEN || head.toString('latin1', 0, 4) !== 'OggS') {
      throw new Error(`not an Ogg page at byte ${pos}`);
    }
    const segCount = head.readUInt8(26);
    const table = readAt(fd, pos + HEADER_LEN, segCount);
    let bodyLen = 0;
    for (const v of table) bodyLen += v;
    const body = readAt(fd, pos + HEADER_LEN + segCount, bodyLen);
    let offset = 0;
    for (const lacing of table) {
      current.push(body.subarray(offset, offset + lacing));
      offset += lacing;
      if (lacing < 255) {
        packets.push(Buffer.concat(current));
        current = [];
        if (packets.length >= 2) break;
      }
    }
    pos += HEADER_LEN + segCount + bodyLen;
  }
  if (packets.length < 2) throw new Error('Vorbis identification/comment headers not found');
  return packets;
}

/** Finds the granule position of the last page that carries one (granule != -1), scanning the tail. */
function lastGranule(fd: number, fileSize: number): bigint {
  for (let window = 65536; ; window *= 4) {
    const start = Math.max(0, fileSize - window);
    const tail = readAt(fd, start, fileSize - start);
    for (let i = tail.length - HEADER_LEN; i >= 0; i--) {
      if (tail[i] === 0x4f && tail.toString('latin1', i, i + 4) === 'OggS' && tail[i + 4] === 0) {
        const granule = tail.readBigInt64LE(i + 6);
        if (granule >= 0n) return granule;
      }
    }
    if (start === 0) throw new Error('no Ogg page with a granule position found');
  }
}

function parseComments(packet: Buffer): Record<string, string> {
  if (packet.readUInt8(0) !== 3 || packet.toString('latin1', 1, 7) !== 'vorbis') {
    throw new Error('second packet is not a Vorbis comment header');
  }
  let p = 7;
  const vendorLen = packet.readUInt32LE(p);
  p += 4 + vendorLen;
  const count = packet.readUInt32LE(p);
  p += 4;
  const tags: Record<string, string> = {};
  for (let i = 0; i < count && p + 4 <= packet.length; i++) {
    const len = packet.readUInt32LE(p);
    p += 4;
    const entry = packet.toString('utf8', p, p + len);
    p += len;
    const eq = entry.indexOf('=');
    if (eq <= 0) continue;
    const key = entry.slice(0, eq).toUpperCase();
    if (!(key in tags)) tags[key] = entry.slice(eq + 1);
  }
  return tags;
}

/**
 * Reads sample rate, channels, duration (seconds) and Vorbis comment tags of an Ogg Vorbis file.
 * Synchronous: reads only the header pages and the last 64 KiB (more only if needed).
 * @throws Error when the file is not Ogg Vorbis or is truncated.
 */
export function readOggVorbisInfo(file: string): OggVorbisInfo {
  const fd = openSync(file, 'r');
  try {
    const sizeBytes = fstatSync(fd).size;
    const [ident, comment] = readHeaderPackets(fd, sizeBytes);
    if (!ident || !comment || ident.readUInt8(0) !== 1 || ident.toString('latin1', 1, 7) !== 'vorbis') {
      throw new Error(`${file}: first packet is not a Vorbis identification header`);
    }
    const channels = ident.readUInt8(11);
    const sampleRate = ident.readUInt32LE(12);
    const granule = lastGranule(fd, sizeBytes);
    return { sampleRate, channels, durationSeconds: Number(granule) / sampleRate, tags: parseComments(comment), sizeBytes };
  } finally {
    closeSync(fd);
  }
}
