/**
 * Operators' dashboards and alerts (issue 36): k8s/monitoring/alerts.rules.yaml and k8s/monitoring/grafana-dashboard.json.
 * - `promtool check rules` accepts the rules file and `promtool test rules` passes its unit tests
 *   (k8s/monitoring/alerts.test.yaml: a database outage's 503s, 502s, a pod down) (Debian package `prometheus`; the
 *   case says SKIPPED when promtool is missing);
 * - every alert has a severity, a summary and a `runbook_url` naming a heading of docs/operations.md that exists;
 * - every metric the rules and the dashboard's queries name is exported by the units of a running stack (each
 *   service's `/metrics` and the gateway's, scraped; a metric counts as exported once its `# TYPE` line is there,
 *   with a histogram's `_bucket`, `_sum` and `_count` series), except `up`, which Prometheus itself writes per scrape.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { useTestStack, API_TOKEN } from './helpers';

const ROOT = path.resolve(__dirname, '../../..');
const RULES = path.join(ROOT, 'k8s/monitoring/alerts.rules.yaml');
const RULE_TESTS = path.join(ROOT, 'k8s/monitoring/alerts.test.yaml');
const DASHBOARD = path.join(ROOT, 'k8s/monitoring/grafana-dashboard.json');
const OPERATIONS = path.join(ROOT, 'docs/operations.md');
/** Series Prometheus writes itself for every scrape target. */
const PROMETHEUS_OWN = new Set(['up']);
const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

interface Rule {
  alert?: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/**
 * The metric names a PromQL expression reads: identifiers that are not function calls, keywords, label names (inside
 * `{...}` or a `by (...)`-style list) or durations (inside `[...]`); Grafana variables (`$name`, `${name}`) removed.
 */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\$\{[^}]*\}|\$\w+/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/(?<![\w.$])[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const rest = stripped.slice(m.index! + m[0].length);
    if (/^\s*\(/.test(rest) || PROMQL_WORDS.has(m[0].toLowerCase())) continue;
    names.add(m[0]);
  }
  return [...names];
}

/** Metric series names a Prometheus text exposition declares (`# TYPE` lines; histogram and summary series expanded). */
function exportedNames(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    out.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) out.add(name + s);
  }
  return out;
}

/** GitHub-style slug of a Markdown heading. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\s-]/g, '')
    .replace(/\s/g, '-');
}

const rules = (parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> }).groups.flatMap((g) => g.rules);
const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }>; templating: { list: Array<{ query?: unknown }> } };
const dashboardExprs = [
  ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)),
  ...dashboard.templating.list.map((v) => (v.query as { query?: string } | undefined)?.query).filter((q): q is string => typeof q === 'string' && q.startsWith('label_values(')).map((q) => /label_values\((\w+)/.exec(q)![1]!),
];

describe('alert rules and dashboard', () => {
  it('When promtool checks the rules file and runs its unit tests, then every rule is accepted and fires as tested (SKIPPED without promtool)', async () => {
    const promtool = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((p) => existsSync(p));
    if (!promtool) {
      console.warn('SKIPPED: promtool is not installed (apt-get install -y prometheus); the rules file was not validated by promtool');
      return;
    }
    const { stdout } = await promisify(execFile)(promtool, ['check', 'rules', RULES]);
    expect(stdout).toMatch(new RegExp(`SUCCESS: ${rules.length} rules found`));
    // The rules' own unit tests: given series, which alerts fire with which labels and annotations.
    const tested = await promisify(execFile)(promtool, ['test', 'rules', path.basename(RULE_TESTS)], { cwd: path.dirname(RULE_TESTS) });
    expect(tested.stdout).toMatch(/SUCCESS/);
  });

  it('When an alert fires, then it has a severity, a summary and a runbook link to an existing heading of docs/operations.md', () => {
    const headings = new Set([...readFileSync(OPERATIONS, 'utf8').matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
    const alerts = rules.filter((r) => r.alert);
    expect(alerts.length).toBeGreaterThanOrEqual(8);
    for (const r of alerts) {
      expect([r.alert, r.labels?.severity]).toEqual([r.alert, expect.stringMatching(/^(critical|warning)$/)]);
      expect([r.alert, typeof r.annotations?.summary]).toEqual([r.alert, 'string']);
      const [file, anchor] = String(r.annotations?.runbook_url).split('#');
      expect([r.alert, file, headings.has(anchor ?? '')]).toEqual([r.alert, 'docs/operations.md', true]);
    }
  });

  it('When metric names are read from PromQL, then label names, functions, ranges and Grafana variables are not taken for metrics', () => {
    expect(metricNames('sum by (service, le) (rate(http_request_duration_seconds_bucket{route!~"/api/(a|b)/.*", status="5xx"}[5m])) > 2.5 * 1e3')).toEqual(['http_request_duration_seconds_bucket']);
    expect(metricNames('process_open_fds{service=~"$service"} / process_max_fds > 0.8 and on (instance) up == 1')).toEqual(['process_open_fds', 'process_max_fds', 'up']);
    expect(metricNames('changes(process_start_time_seconds[$__rate_interval])')).toEqual(['process_start_time_seconds']);
  });

  describe('on a running stack', () => {
    const fixture = useTestStack();

    it('When the units are scraped, then every metric the rules and the dashboard name is exported', async () => {
      const peers = fixture.stack.peers();
      const exported = new Set<string>();
      const targets: Array<[string, Record<string, string>]> = [
        ...Object.values(peers).map((u) => [`${u}/metrics`, {}] as [string, Record<string, string>]),
        [`${fixture.url}/metrics`, { Authorization: `Bearer ${API_TOKEN}` }],
      ];
      // One request first, so the request histogram has been observed at least once everywhere.
      for (const [u, headers] of targets) await (await fetch(u, { headers })).text();
      for (const [u, headers] of targets) {
        const res = await fetch(u, { headers });
        expect([u, res.status]).toEqual([u, 200]);
        for (const n of exportedNames(await res.text())) exported.add(n);
      }
      const named = new Map<string, string>();
      for (const r of rules) for (const n of metricNames(r.expr)) named.set(n, `rule ${r.alert}`);
      for (const e of dashboardExprs) for (const n of metricNames(e)) named.set(n, 'dashboard');
      expect(named.size).toBeGreaterThanOrEqual(10);
      const missing = [...named].filter(([n]) => !exported.has(n) && !PROMETHEUS_OWN.has(n));
      expect(missing).toEqual([]);
    });
  });
});
