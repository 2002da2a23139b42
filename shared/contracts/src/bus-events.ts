import type { ZodType, ZodTypeDef } from 'zod';
import {
  AnalysisTrackCompleted,
  AnalysisTrackRequested,
  IdsRelabelledEvent,
  IndexRebuildRequested,
  IndexRebuilt,
  IndexDeltaApplied,
  MappingChangedEvent,
  MappingsLoggedEvent,
  RoutingKeys,
  ServerCountedEvent,
  ServerDeletedEvent,
  ServerSavedEvent,
  SweepRequestedEvent,
  TaskCancelRequestedEvent,
  TaskUpdatedEvent,
} from './events';
import { SettingsChangedEvent } from './settings';

/** A bus event: its routing key and the zod schema of its payload (`T` the parsed payload). */
export interface BusEvent<T> {
  readonly key: string;
  readonly schema: ZodType<T, ZodTypeDef, unknown>;
}

const event = <T>(key: string, schema: ZodType<T, ZodTypeDef, unknown>): BusEvent<T> => ({ key, schema });

/**
 * Every bus event once, key with payload schema (the bus's counterpart of the route table): a consumer
 * binds `BusEvents.x` (platform `consumeEvent`) and gets the key and the schema that validates it
 * together, so the two cannot drift apart.
 */
export const BusEvents = {
  serverSaved: event(RoutingKeys.serverSaved, ServerSavedEvent),
  serverDeleted: event(RoutingKeys.serverDeleted, ServerDeletedEvent),
  sweepRequested: event(RoutingKeys.sweepRequested, SweepRequestedEvent),
  taskUpdated: event(RoutingKeys.taskUpdated, TaskUpdatedEvent),
  taskCancelRequested: event(RoutingKeys.taskCancelRequested, TaskCancelRequestedEvent),
  analysisTrackRequested: event(RoutingKeys.analysisTrackRequested, AnalysisTrackRequested),
  analysisTrackCompleted: event(RoutingKeys.analysisTrackCompleted, AnalysisTrackCompleted),
  mappingChanged: event(RoutingKeys.mappingChanged, MappingChangedEvent),
  mappingsLogged: event(RoutingKeys.mappingsLogged, MappingsLoggedEvent),
  serverCounted: event(RoutingKeys.serverCounted, ServerCountedEvent),
  indexRebuildRequested: event(RoutingKeys.indexRebuildRequested, IndexRebuildRequested),
  indexRebuilt: event(RoutingKeys.indexRebuilt, IndexRebuilt),
  indexDeltaApplied: event(RoutingKeys.indexDeltaApplied, IndexDeltaApplied),
  idsRelabelled: event(RoutingKeys.idsRelabelled, IdsRelabelledEvent),
  settingsChanged: event(RoutingKeys.settingsChanged, SettingsChangedEvent),
} satisfies Record<keyof typeof RoutingKeys, BusEvent<unknown>>;
