/**
 * Analysis (CATALOGUE): start one analysis over every server (default first), follow it with a
 * progress bar and per-server counts, cancel it. No server selector: batch tasks run on all servers.
 */
import { taskRoutes } from '@polyphony/contracts';
import { call } from '../api';
import { h } from '../dom';
import type { Page } from '../page';
import { taskPanel } from '../task-panel';

const page: Page = {
  title: 'Analysis',
  tag: 'CATALOGUE',
  render(root, { kickTasks, isAdmin }) {
    const panel = taskPanel({ kind: 'analysis', startLabel: 'Start analysis', isAdmin, kickTasks, start: () => call(taskRoutes.analysisStart, { body: {} }) });
    root.append(
      h('p', { text: 'Analysis runs over every configured server, one after the other, default server first. Songs already analyzed from another server are only mapped, never analyzed twice. The similarity index is rebuilt once at the end.' }),
      panel.element,
    );
    return panel.stop;
  },
};
export default page;
