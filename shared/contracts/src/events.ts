import { z } from './zod';

/**
 * Bus routing keys (`<context>.<entity>.<past-tense-verb>.v<N>`) and their payload schemas.
 * A payload never changes in place: a new version gets a new key.
 */
export const RoutingKeys = {
  serverSaved: 'registry.server.saved.v1',
  serverDeleted: 'registry.server.deleted.v1',
  sweepRequested: 'registry.sweep.requested.v1',
  taskUpdated: 'task.status.updated.v1',
  taskCancelRequested: 'task.cancel.requested.v1',
  analysisTrackRequested: 'analysis.track.requested.v1',
  analysisTrackCompleted: 'analysis.track.completed.v1',
  mappingChanged: 'catalogue.mapping.changed.v1',
  mappingsLogged: 'catalogue.mappings.logged.v1',
  serverCounted: 'catalogue.server.counted.v1',
  indexRebuildRequested: 'index.rebuild.requested.v1',
  indexRebuilt: 'index.rebuild.completed.v1',
  indexDeltaApplied: 'index.delta.applied.v1',
  idsRelabelled: 'catalogue.ids.relabelled.v1',
  settingsChanged: 'registry.settings.changed.v1',
} as const;

/**
 * Every durable work queue the services consume (without the BUS_NAMESPACE prefix); each has a
 * `<queue>.dlq` dead-letter queue. The dead-letter endpoints list and replay these.
 */
export const ConsumerQueues = [
  'analysis.tracks',
  'analysis.task-cancel',
  'catalogue.sweep-requests',
  'catalogue.task-cancel',
  'catalogue.server-deleted',
  'index.rebuild-requests',
  'index.mapping-changes',
  'index.ids-relabelled',
  'index.live-library',
  'playlist.server-deleted',
  'playlist.task-cancel',
  'registry.task-board',
  'registry.server-counts',
] as const;

export const ServerSavedEvent = z.object({ serverId: z.string(), action: z.enum(['created', 'updated', 'default_changed']) });
export type ServerSavedEvent = z.infer<typeof ServerSavedEvent>;

export const ServerDeletedEvent = z.object({ serverId: z.string() });
export type ServerDeletedEvent = z.infer<typeof ServerDeletedEvent>;

/** A sweep of one server, or (no serverId) an alignment over every server. */
export const SweepRequestedEvent = z.object({ taskId: z.string(), serverId: z.string().optional(), fullRefresh: z.boolean().default(true), cancelRunning: z.boolean().default(false) });
export type SweepRequestedEvent = z.infer<typeof SweepRequestedEvent>;

export const TaskType = z.enum(['analysis', 'cleaning', 'sweep', 'alignment', 'clustering', 'index_build', 'backup', 'restore', 'lyrics_backfill', 'radios', 'import']);
export type TaskType = z.infer<typeof TaskType>;
export const TaskState = z.enum(['NEW', 'RUNNING', 'SUCCESS', 'FAIL', 'REVOKED']);
export type TaskState = z.infer<typeof TaskState>;

/** Per-server counters of a batch task. */
export const ServerTaskCounts = z.object({
  serverId: z.string(),
  serverName: z.string().optional(),
  seen: z.number().int().default(0),
  skippedMapped: z.number().int().default(0),
  mappedExisting: z.number().int().default(0),
  analyzed: z.number().int().default(0),
  failed: z.number().int().default(0),
  status: z.string().optional(),
  error: z.string().optional(),
});
export type ServerTaskCounts = z.infer<typeof ServerTaskCounts>;

/** Full snapshot of a task's state, published by the task's owner on every change; the registry's task board keeps the latest. */
export const TaskUpdatedEvent = z.object({
  taskId: z.string(),
  type: TaskType,
  owner: z.enum(['analysis', 'catalogue', 'index', 'playlist', 'registry']),
  state: TaskState,
  /** 0-100 */
  progress: z.number().min(0).max(100),
  message: z.string().max(500),
  servers: z.array(ServerTaskCounts).default([]),
  log: z.array(z.string()).max(200).default([]),
  details: z.record(z.unknown()).default({}),
  startedAt: z.string().optional(),
  finishedAt: z.string().optional(),
  /** Monotonic per task, so an out-of-order older snapshot never overwrites a newer one. */
  seq: z.number().int().nonnegative(),
});
export type TaskUpdatedEvent = z.infer<typeof TaskUpdatedEvent>;

export const TaskCancelRequestedEvent = z.object({ taskId: z.string(), type: TaskType });
export type TaskCancelRequestedEvent = z.infer<typeof TaskCancelRequestedEvent>;

/** A media server's track as messages and internal answers carry it (provider id, tags, seconds, file path). */
export const ProviderTrackMessage = z.object({
  id: z.string(),
  title: z.string(),
  artist: z.string(),
  artistId: z.string().optional(),
  album: z.string().optional(),
  albumArtist: z.string().optional(),
  year: z.number().optional(),
  rating: z.number().optional(),
  durationSeconds: z.number().optional(),
  path: z.string().optional(),
  /** The provider library the listing found the file in (issue 34). */
  libraryId: z.string().optional(),
  /** The provider's stamp of the file's content (issue 35). */
  fileStamp: z.string().optional(),
});

/** One track to analyze (competing consumers). */
export const AnalysisTrackRequested = z.object({
  taskId: z.string(),
  serverId: z.string(),
  track: ProviderTrackMessage,
  /** MSD tags to keep in the song's mood_vector (the run's TOP_N_MOODS); absent = the worker's setting. */
  topNMoods: z.number().int().min(1).max(50).optional(),
  /**
   * The file is mapped but changed in place (issue 35): its listed `track.fileStamp` differs from the mapping's stored
   * stamp. The worker analyses it again although it is mapped and resolves it with `changedFile` (the catalogue
   * decides whether it is still the same song). Absent/false: a mapped file is skipped as before.
   */
  changedFile: z.boolean().optional(),
});
export type AnalysisTrackRequested = z.infer<typeof AnalysisTrackRequested>;

export const AnalysisTrackCompleted = z.object({
  taskId: z.string(),
  serverId: z.string(),
  providerId: z.string(),
  outcome: z.enum(['analyzed', 'mapped_existing', 'skipped_mapped', 'failed', 'excluded']),
  itemId: z.string().optional(),
  error: z.string().optional(),
});
export type AnalysisTrackCompleted = z.infer<typeof AnalysisTrackCompleted>;

export const MappingChangedEvent = z.object({ serverId: z.string().optional(), reason: z.string() });
export type MappingChangedEvent = z.infer<typeof MappingChangedEvent>;

/**
 * catalogue.mappings.logged.v1: the catalogue's mapping log (GET /internal/mappings/changes) advanced,
 * published within a few ms of every mapping write (not debounced like mapping.changed). A nudge: an
 * index replica pulls the log after its own cursor, so a lost or reordered nudge only delays, never corrupts.
 */
export const MappingsLoggedEvent = z.object({ reason: z.string(), serverId: z.string().optional() });
export type MappingsLoggedEvent = z.infer<typeof MappingsLoggedEvent>;

export const IndexRebuildRequested = z.object({ reason: z.string(), taskId: z.string().optional() });
export type IndexRebuildRequested = z.infer<typeof IndexRebuildRequested>;

export const IndexRebuilt = z.object({
  generation: z.number().int(),
  items: z.number().int(),
  taskId: z.string().optional(),
  /** True when the live generation's stored ids were rewritten in place (relabel): every replica reloads it. */
  repointed: z.boolean().optional(),
});
export type IndexRebuilt = z.infer<typeof IndexRebuilt>;

/**
 * The live library stored a delta batch of new songs for the live generation (`index.deltas`, sequence `seq`): every
 * replica applies the stored batches after the one it serves (docs/architecture.md "Live library (incremental index)").
 */
export const IndexDeltaApplied = z.object({
  generation: z.number().int(),
  seq: z.number().int(),
  /** Songs in the batch. */
  items: z.number().int(),
});
export type IndexDeltaApplied = z.infer<typeof IndexDeltaApplied>;

/** Per-server counts reported by the catalogue after a sweep, analysis or the hourly refresh. */
export const ServerCountedEvent = z.object({ serverId: z.string(), trackCount: z.number().int().nullable(), matchedCount: z.number().int().nullable() });
export type ServerCountedEvent = z.infer<typeof ServerCountedEvent>;

/**
 * The catalogue relabelled its ids to a new scheme version (once, at start). The old -> new map is
 * at GET /internal/ids/relabel-map?toVersion=<toVersion>; an index repoints its ids from it without
 * moving vectors, or rebuilds when it cannot.
 */
export const IdsRelabelledEvent = z.object({
  toVersion: z.number().int(),
  relabelled: z.number().int(),
  merged: z.number().int(),
  unsignable: z.number().int(),
  detachedMappings: z.number().int(),
});
export type IdsRelabelledEvent = z.infer<typeof IdsRelabelledEvent>;
