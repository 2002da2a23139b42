/**
 * Settings (CATALOGUE, admin): every editable setting of the config store (GET /api/config/settings,
 * PUT /api/config) with its description, source and whether it applies live; secrets write-only.
 */
import { h } from '../dom';
import type { Page } from '../page';
import { settingsForm } from '../settings-form';

const page: Page = {
  title: 'Settings',
  tag: 'CATALOGUE',
  admin: true,
  render(root) {
    root.append(h('p', { class: 'muted', text: 'Changes are validated by the server; a wrong value is refused with its reason and nothing is stored. Most settings apply at once; the others say so.' }), settingsForm());
  },
};
export default page;
