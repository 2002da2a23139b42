// npm links every workspace into node_modules/<name> when it installs. A checkout whose node_modules
// predates a workspace added since (a new shared/* package) lacks that link, and `tsc -b` then fails
// with "Cannot find module". This adds the missing links (relative symlinks, as npm makes them) and
// touches nothing else; `npm install` remains the full fix (it also installs new dependencies).
import { existsSync, lstatSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { workspaces = [] } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
for (const dir of workspaces) {
  const manifest = path.join(root, dir, 'package.json');
  if (!existsSync(manifest)) continue;
  const { name } = JSON.parse(readFileSync(manifest, 'utf8'));
  const link = path.join(root, 'node_modules', name);
  try {
    lstatSync(link);
    continue; // present (link or directory): npm's business
  } catch {
    mkdirSync(path.dirname(link), { recursive: true });
    symlinkSync(path.relative(path.dirname(link), path.join(root, dir)), link, 'dir');
    console.log(`link-workspaces: ${name} -> ${dir}`);
  }
}
