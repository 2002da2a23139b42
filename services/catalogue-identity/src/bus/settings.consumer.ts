import { BusEvents } from '@polyphony/contracts';
import { consumeEvent, type Bus, type ConsumerHandle, type Logger } from '@polyphony/platform';
import { CATALOGUE_SETTING_KEYS, type CatalogueSettingKey, type CatalogueSettings } from '../settings';

/**
 * registry.settings.changed.v1: an admin changed settings in the registry's config store; the keys
 * this service owns are written into catalogue.settings (validated again) and apply from the next
 * read (the settings cache is dropped). A null value resets the key to its default. A value this
 * service refuses is logged and skipped (the registry validated it with the same ranges). Idempotent.
 */
export function consumeSettingsChanged(bus: Bus, settings: CatalogueSettings, logger: Logger, prefetch: number): Promise<ConsumerHandle> {
  return consumeEvent(bus, BusEvents.settingsChanged, {
    queue: 'catalogue.settings-changed',
    prefetch,
    handler: async (e) => {
      for (const [key, value] of Object.entries(e.values)) {
        if (!(CATALOGUE_SETTING_KEYS as readonly string[]).includes(key)) continue;
        try {
          if (value === null) await settings.reset(key as CatalogueSettingKey);
          else await settings.set(key as CatalogueSettingKey, value);
          logger.info('setting applied', { key });
        } catch (err) {
          logger.warn('setting refused', { key, error: (err as Error).message });
        }
      }
    },
  });
}
