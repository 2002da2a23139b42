/**
 * Backup and restore (CATALOGUE, admin): list archives (GET /api/backup), start a backup (optional
 * passphrase: media-server secrets kept encrypted, else left out), download, delete, restore a
 * listed archive or an uploaded one (all or nothing; ends every session, so you log in again).
 */
import { buildPath, opsRoutes, type BackupDto } from '@polyphony/contracts';
import { call } from '../api';
import { busy, errText, field, h, msg, say, section, table } from '../dom';
import type { Page } from '../page';
import { fmtBytes } from '../track-format';

const page: Page = {
  title: 'Backup and restore',
  tag: 'CATALOGUE',
  admin: true,
  render(root, { kickTasks }) {
    const out = msg();
    const list = h('div', {}, h('p', { class: 'muted', text: 'Loading…' }));
    const pass = h('input', { type: 'password', autocomplete: 'new-password', minlength: '8' });
    const start = h('button', { type: 'submit', class: 'primary', text: 'Start backup' });
    const form = h('form', { class: 'inline' }, field('Passphrase (optional)', pass, 'With a passphrase, media-server tokens, passwords and API keys are kept, encrypted (AES-256-GCM); without, they are left out.'), start);
    const restorePass = h('input', { type: 'password', autocomplete: 'off' });
    const file = h('input', { type: 'file', accept: '.gz,.tgz,application/gzip' });
    const upload = h('button', { type: 'submit', text: 'Restore uploaded archive' });
    const restoreOut = msg();
    const uploadForm = h('form', { class: 'inline' }, field('Archive file', file), upload);
    let timer: ReturnType<typeof setTimeout> | undefined;

    const restore = async (opts: { id?: string; file?: File }) => {
      if (!confirm('Restore replaces everything this install holds with the archive (all or nothing) and ends every session. Continue?')) return;
      say(restoreOut, 'Restoring…');
      const headers = restorePass.value ? { 'x-backup-passphrase': restorePass.value } : undefined;
      if (opts.id) await call(opsRoutes.backupRestore, { query: { id: opts.id } }, { headers, allow401: true });
      else if (opts.file) await call(opsRoutes.backupRestore, {}, { headers, allow401: true, raw: { body: opts.file, contentType: 'application/gzip' } });
      say(restoreOut, 'Restored. The index is rebuilt in the background; every session ended, so log in again.', 'ok');
      kickTasks();
      setTimeout(() => location.replace('/login'), 4000);
    };
    const load = async () => {
      clearTimeout(timer);
      const { backups } = await call(opsRoutes.backupList, {});
      list.replaceChildren(
        backups.length
          ? table(
              null,
              ['Created', 'Status', 'Size', 'Rows', 'Secrets', 'Message', 'Actions'],
              backups.map((b: BackupDto) => {
                const label = new Date(b.created_at).toLocaleString();
                const restoreButton = h('button', { type: 'button', class: 'small', text: 'Restore', 'aria-label': `Restore backup of ${label}`, disabled: b.status !== 'ready' });
                restoreButton.addEventListener('click', () => busy(restoreButton, restoreOut, () => restore({ id: b.id })));
                const del = h('button', { type: 'button', class: 'small danger', text: 'Delete', 'aria-label': `Delete backup of ${label}` });
                del.addEventListener('click', () =>
                  busy(del, out, async () => {
                    if (!confirm(`Delete the backup of ${label}?`)) return;
                    await call(opsRoutes.backupDelete, { params: { id: b.id } });
                    await load();
                  }),
                );
                const download = b.status === 'ready' ? h('a', { href: buildPath(opsRoutes.backupDownload.path, { id: b.id }), download: `polyphony-${b.id}.tar.gz`, text: 'Download', 'aria-label': `Download backup of ${label}` }) : null;
                return [label, b.status, fmtBytes(b.size_bytes), b.rows === null ? '—' : String(b.rows), b.secrets, b.message, h('div', { class: 'actions' }, download, restoreButton, del)];
              }),
              { class: 'backups' },
            )
          : h('p', { class: 'muted', text: 'No backup yet.' }),
      );
      if (backups.some((b) => b.status === 'running')) timer = setTimeout(() => void load().catch(() => undefined), 2000);
    };
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void busy(start, out, async () => {
        await call(opsRoutes.backupCreate, { body: pass.value ? { passphrase: pass.value } : {} });
        pass.value = '';
        say(out, 'Backup started.', 'ok');
        kickTasks();
        await load();
      });
    });
    uploadForm.addEventListener('submit', (e) => {
      e.preventDefault();
      const f = file.files?.[0];
      if (!f) return say(restoreOut, 'Choose an archive file first.', 'error');
      void busy(upload, restoreOut, () => restore({ file: f }));
    });
    root.append(
      section('Backups', h('p', { class: 'muted', text: 'A consistent snapshot of everything the install owns: servers, catalogue, analysis, playlists written, schedules, settings, users.' }), form, out, list),
      section('Restore', field('Passphrase of the archive (if it has encrypted secrets)', restorePass), uploadForm, restoreOut),
    );
    load().catch((err: unknown) => say(out, errText(err), 'error'));
    return () => clearTimeout(timer);
  },
};
export default page;
