/**
 * Kubernetes manifests (k8s/, kustomize) parsed as YAML and checked for the operational rules of
 * issue 12: migrations run before any pod of a unit serves (init container, same image, idempotent
 * migrate command), required secrets fail the pod instead of being invented, liveness never touches
 * the database or broker, every Deployment has a PodDisruptionBudget, graceful stop fits the grace
 * period, and every resource kustomize lists exists.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

const K8S = path.resolve(__dirname, '../../../k8s');
type Doc = { kind: string; metadata: { name: string }; spec: any };

function load(file: string): Doc[] {
  return parseAllDocuments(readFileSync(path.join(K8S, file), 'utf8')).map((d) => d.toJS() as Doc).filter(Boolean);
}
const kustomization = load('kustomization.yaml')[0] as unknown as { resources: string[] };
const docs = kustomization.resources.flatMap(load);
const deployments = docs.filter((d) => d.kind === 'Deployment');
const config = docs.find((d) => d.kind === 'ConfigMap') as unknown as { data: Record<string, string> };

describe('Kubernetes manifests', () => {
  it('When kustomize builds the install, then it has the six units and no standalone migrate Job left to order by hand', () => {
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(['analysis-worker', 'catalogue-identity', 'gateway', 'index', 'playlist', 'registry']);
    expect(docs.filter((d) => d.kind === 'Job')).toEqual([]);
  });

  it.each(['gateway', 'registry', 'catalogue-identity', 'analysis-worker', 'index', 'playlist'])('When a %s pod starts, then its schema migration runs first, from the same image, with its own migrate command', (name) => {
    const d = deployments.find((x) => x.metadata.name === name)!;
    const pod = d.spec.template.spec;
    const [init] = pod.initContainers;
    const [main] = pod.containers;
    expect(init.name).toBe('migrate');
    expect(init.image).toBe(main.image);
    const entry = main.command[main.command.length - 1] as string;
    expect(init.command).toEqual(['node', entry.replace(/main\.js$/, 'migrate.js')]);
  });

  it.each(['gateway', 'registry', 'catalogue-identity', 'analysis-worker', 'index', 'playlist'])('When %s is deployed, then INTERNAL_SECRET is a required secret key (a missing one fails the pod), liveness is /healthz and readiness /readyz', (name) => {
    const main = deployments.find((x) => x.metadata.name === name)!.spec.template.spec.containers[0];
    const secret = main.env.find((e: { name: string }) => e.name === 'INTERNAL_SECRET');
    expect(secret.valueFrom.secretKeyRef).toEqual({ name: 'polyphony-secrets', key: 'INTERNAL_SECRET' });
    expect(secret.valueFrom.secretKeyRef.optional).toBeUndefined();
    expect(main.livenessProbe.httpGet.path).toBe('/healthz');
    expect(main.readinessProbe.httpGet.path).toBe('/readyz');
  });

  it('When the gateway runs several replicas, then JWT_SECRET is required from the secret (sessions valid on every replica)', () => {
    const gw = deployments.find((x) => x.metadata.name === 'gateway')!;
    expect(gw.spec.replicas).toBeGreaterThan(1);
    const jwt = gw.spec.template.spec.containers[0].env.find((e: { name: string }) => e.name === 'JWT_SECRET');
    expect(jwt.valueFrom.secretKeyRef).toEqual({ name: 'polyphony-secrets', key: 'JWT_SECRET' });
  });

  it('When the registry writes backups, then BACKUP_DIR is a mounted persistent volume (archives outlive the pod)', () => {
    const pod = deployments.find((d) => d.metadata.name === 'registry')!.spec.template.spec;
    const [main] = pod.containers;
    const dir = main.env.find((e: { name: string }) => e.name === 'BACKUP_DIR')?.value;
    expect(dir).toBeDefined();
    const mount = main.volumeMounts.find((m: { mountPath: string }) => m.mountPath === dir);
    expect(mount).toBeDefined();
    const volume = pod.volumes.find((v: { name: string }) => v.name === mount.name);
    const claim = docs.find((d) => d.kind === 'PersistentVolumeClaim' && d.metadata.name === volume.persistentVolumeClaim.claimName);
    expect(claim?.spec.resources.requests.storage).toMatch(/Gi$/);
  });

  it('When the index keeps quantised vectors, then INDEX_VECTOR_DIR is a disk scratch volume (emptyDir, not memory) with a size limit', () => {
    const pod = deployments.find((d) => d.metadata.name === 'index')!.spec.template.spec;
    const [main] = pod.containers;
    const dir = main.env.find((e: { name: string }) => e.name === 'INDEX_VECTOR_DIR')?.value;
    const mount = main.volumeMounts.find((m: { mountPath: string }) => m.mountPath === dir);
    const volume = pod.volumes.find((v: { name: string }) => v.name === mount?.name);
    expect(volume?.emptyDir?.medium).toBeUndefined();
    expect(volume?.emptyDir?.sizeLimit).toMatch(/Gi$/);
  });

  it('When the index starts, then it preloads the jemalloc library at the path the image links it to (freed memory is returned)', () => {
    const dockerfile = readFileSync(path.resolve(__dirname, '../../docker/Dockerfile'), 'utf8');
    const linked = /ln -s "[^"]*libjemalloc\.so\.2[^"]*" (\S+)/.exec(dockerfile)?.[1];
    expect(dockerfile).toMatch(/apt-get install[^\n]*libjemalloc2/);
    const [main] = deployments.find((d) => d.metadata.name === 'index')!.spec.template.spec.containers;
    const env = Object.fromEntries(main.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    expect(env.LD_PRELOAD).toBe(linked);
    expect(env.MALLOC_CONF).toMatch(/background_thread:true/);
    const compose = parseAllDocuments(readFileSync(path.resolve(__dirname, '../../../docker-compose.yml'), 'utf8'), { merge: true })[0]!.toJS({ maxAliasCount: -1 }) as { services: Record<string, { environment?: Record<string, string> }> };
    expect(compose.services.index!.environment).toMatchObject({ LD_PRELOAD: linked, MALLOC_CONF: env.MALLOC_CONF });
  });

  it('When the index starts (k8s, docker-compose, the image\'s standalone command, npm start, the index unit\'s start), then V8\'s young generation has the one capped semi-space size', () => {
    const [main] = deployments.find((d) => d.metadata.name === 'index')!.spec.template.spec.containers;
    const env = Object.fromEntries(main.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    const flag = /--max-semi-space-size=(\d+)/.exec(env.NODE_OPTIONS ?? '')?.[0];
    // A small cap (MiB per semi-space): V8's default is 16, grown under traffic and kept after a full GC.
    expect(Number(flag?.split('=')[1])).toBeGreaterThan(0);
    expect(Number(flag?.split('=')[1])).toBeLessThan(16);
    const compose = parseAllDocuments(readFileSync(path.resolve(__dirname, '../../../docker-compose.yml'), 'utf8'), { merge: true })[0]!.toJS({ maxAliasCount: -1 }) as { services: Record<string, { environment?: Record<string, string> }> };
    expect(compose.services.index!.environment!.NODE_OPTIONS).toBe(env.NODE_OPTIONS);
    const dockerfile = readFileSync(path.resolve(__dirname, '../../docker/Dockerfile'), 'utf8');
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)![1]!) as string[];
    expect(cmd).toEqual(['node', flag, 'infra/standalone/dist/main.js']);
    const pkg = JSON.parse(readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toContain(`node ${flag!} infra/standalone/dist/main.js`);
    const indexPkg = JSON.parse(readFileSync(path.resolve(__dirname, '../../../services/index/package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(indexPkg.scripts.start).toBe(`node ${flag!} dist/main.js`);
  });

  it('When analysis workers start, then MODELS_DIR is a read-only mounted volume that every worker shares', () => {
    const pod = deployments.find((d) => d.metadata.name === 'analysis-worker')!.spec.template.spec;
    const [main] = pod.containers;
    const dir = main.env.find((e: { name: string }) => e.name === 'MODELS_DIR')?.value;
    const mount = main.volumeMounts.find((m: { mountPath: string }) => m.mountPath === dir);
    expect(mount?.readOnly).toBe(true);
    const claim = pod.volumes.find((v: { name: string }) => v.name === mount.name).persistentVolumeClaim.claimName;
    expect(docs.find((d) => d.kind === 'PersistentVolumeClaim' && d.metadata.name === claim)?.spec.accessModes).toEqual(['ReadOnlyMany']);
  });

  it('When a node is drained, then every Deployment keeps at least one pod (a PodDisruptionBudget selects it)', () => {
    const pdbs = docs.filter((d) => d.kind === 'PodDisruptionBudget');
    for (const d of deployments) {
      const labels = d.spec.template.metadata.labels;
      const pdb = pdbs.find((p) => Object.entries(p.spec.selector.matchLabels).every(([k, v]) => labels[k] === v));
      expect([d.metadata.name, pdb?.spec.minAvailable]).toEqual([d.metadata.name, 1]);
    }
  });

  it('When a pod gets SIGTERM, then the graceful stop bound is shorter than its grace period', () => {
    const timeoutMs = Number(config.data.SHUTDOWN_TIMEOUT_MS);
    expect(timeoutMs).toBeGreaterThan(0);
    for (const d of deployments) expect([d.metadata.name, timeoutMs < d.spec.template.spec.terminationGracePeriodSeconds * 1000]).toEqual([d.metadata.name, true]);
  });
});

describe('docker compose', () => {
  const text = readFileSync(path.resolve(__dirname, '../../../docker-compose.yml'), 'utf8');
  const compose = parseAllDocuments(text, { merge: true })[0]!.toJS({ maxAliasCount: -1 }) as { services: Record<string, { command?: string[]; depends_on?: Record<string, { condition: string }>; environment?: Record<string, string> }> };
  const units = Object.entries(compose.services).filter(([, s]) => s.command?.[1]?.endsWith('/main.js'));

  it('When the stack starts, then every unit waits for the migrate service to complete first', () => {
    expect(units.map(([n]) => n).sort()).toEqual(['analysis-worker', 'catalogue-identity', 'gateway', 'index', 'playlist', 'registry']);
    for (const [name, s] of units) expect([name, s.depends_on?.migrate?.condition]).toEqual([name, 'service_completed_successfully']);
  });

  it('When INTERNAL_SECRET or JWT_SECRET is missing from .env, then compose refuses to start instead of inventing one', () => {
    expect(text).toMatch(/INTERNAL_SECRET: \$\{INTERNAL_SECRET:\?/);
    expect(text).toMatch(/JWT_SECRET: \$\{JWT_SECRET:\?/);
  });
});
