// The fixture every browser spec shares: Debian's chromium through playwright-core (resolved from
// web/node_modules), sign-in with a token, screenshots, and REST API helpers that create what a
// spec needs (its own uniquely named trace upload, scenario and experiment) so that no spec
// depends on another's leftovers or on the order the specs run in.
//
//   import { useBrowser } from './fixture.mjs';
//   const ui = useBrowser();            // before/after hooks: one chromium per spec file
//   ui.step('does X', async () => { ... ui.page ... });
//
// Environment (set by tests/e2e/run.sh): E2E_BASE, E2E_ADMIN_TOKEN, E2E_VIEWER_TOKEN, E2E_OUT,
// E2E_CHROMIUM.
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

const require = createRequire(new URL('../../web/package.json', import.meta.url));
const { chromium } = require('playwright-core');

export const BASE = process.env.E2E_BASE ?? 'http://127.0.0.1:8700';
export const ADMIN = process.env.E2E_ADMIN_TOKEN ?? '';
export const VIEWER = process.env.E2E_VIEWER_TOKEN ?? '';
export const OUT = process.env.E2E_OUT ?? new URL('./screenshots', import.meta.url).pathname;
mkdirSync(OUT, { recursive: true });

// the flags chromium needs here: no sandbox (root), no GPU, nothing phoning home
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
];

export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), 'satlab-e2e-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.E2E_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    acceptDownloads: true,
    viewport: { width: 1280, height: 900 },
    args: CHROMIUM_ARGS,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of (401|403|409|422)/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  const close = async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, page, problems, close };
}

/**
 * One chromium for the spec file (before/after hooks), a `step` that skips the rest of a journey
 * after a failure (with a FAILED-… screenshot of the page as it was) instead of each step waiting
 * out its timeout, and a last test that the browser console stayed clean. Experiments passed to
 * `track` that are still going when the spec ends are cancelled, so a failed spec leaves no runs
 * queued in front of the next spec's.
 */
export function useBrowser() {
  const ui = { page: undefined, problems: undefined, failed: false };
  const tracked = new Set();
  let close;
  ui.track = (experimentId) => tracked.add(experimentId);
  ui.nav = (name) => ui.page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
  ui.step = (name, fn) =>
    test(name, async (t) => {
      if (ui.failed) {
        t.skip('an earlier step failed');
        return;
      }
      try {
        await fn();
      } catch (err) {
        ui.failed = true;
        await shot(ui.page, `FAILED-${name.replace(/\W+/g, '-').slice(0, 40)}`).catch(() => undefined);
        throw err;
      }
    });
  before(async () => {
    ({ page: ui.page, problems: ui.problems, close } = await launch());
  });
  after(async () => {
    for (const id of tracked) await cancelIfGoing(id).catch(() => undefined);
    await close?.();
  });
  // registered last: node's runner runs the tests of a file in the order they are declared
  process.nextTick(() =>
    test('no page errors in the browser console', () => {
      assert.deepEqual(ui.problems, []);
    }),
  );
  return ui;
}

/** Signs in from the sign-in page (signing out first if the tab is signed in). */
export async function signIn(page, token) {
  await page.goto(`${BASE}/#/`);
  if (await page.evaluate(() => sessionStorage.getItem('satlab.token'))) {
    await page.evaluate(() => sessionStorage.removeItem('satlab.token'));
    await page.reload();
  }
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

export async function shot(page, name) {
  await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
}

/** Id from the UI's hash route, e.g. #/experiments/12 -> 12. */
export const idFromUrl = (page) => Number(new URL(page.url()).hash.split('/')[2]);

// ---- REST API --------------------------------------------------------------------------------

export async function api(method, path, { token = ADMIN, json, body, contentType } = {}) {
  const headers = { Authorization: `Bearer ${token}` };
  if (json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(json);
  } else if (contentType) headers['Content-Type'] = contentType;
  const res = await fetch(`${BASE}${path}`, { method, headers, body });
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${await res.text()}`);
  return res.status === 204 ? undefined : res.json();
}

export const apiGet = (path, token = ADMIN) => api('GET', path, { token });

/** A name no other spec (nor an earlier run of this one on the same database) uses: ≤ 40 chars. */
export function uniqueName(tag) {
  const suffix = `${Date.now().toString(36)}${Math.floor(Math.random() * 36 ** 3).toString(36)}`;
  return `e2e-${tag}-${suffix}`.slice(0, 40);
}

const TEMPLATES = new URL('../../web/src/templates/', import.meta.url);

/** Uploads the quickstart template's fade trace under a name of its own; returns the name. */
export async function uploadTrace(tag) {
  const name = `traces/${uniqueName(tag)}-fade.txt`;
  await api('POST', `/api/files?name=${encodeURIComponent(name)}&kind=attenuation`, {
    body: readFileSync(new URL('quickstart-fade.txt', TEMPLATES), 'utf8'),
    contentType: 'application/octet-stream',
  });
  return name;
}

/**
 * A scenario of its own, the way the editor spec makes one with the form: the quickstart template
 * (its comments kept) run for `duration` s with a 20 ms ACM refresh (the 150-tick fade lasts 3 s),
 * the given configurations, and its own upload of the fade trace. Returns { id, name, trace }.
 */
export async function createScenario(tag, { configurations = ['cubic', 'reno', 'bbr'], duration = 6 } = {}) {
  const name = uniqueName(tag);
  const trace = await uploadTrace(tag);
  let yaml = readFileSync(new URL('quickstart.yaml', TEMPLATES), 'utf8')
    .replace(/^name: quickstart$/m, `name: ${name}`)
    .replace(/^duration_s: \d+$/m, `duration_s: ${duration}`)
    .replace(/^( {4}duration_s:) \d+$/m, `$1 ${duration}`)
    .replace(/acm: \{refresh_ms: \d+,/, 'acm: {refresh_ms: 20,')
    .replace('traces/quickstart-fade.txt', trace);
  yaml = yaml.slice(0, yaml.indexOf('configurations:'));
  yaml += 'configurations:\n' + configurations.map((c) => `  - name: ${c}\n    transport: {congestion_control: ${c}}\n`).join('');
  const sc = await api('POST', '/api/scenarios', { json: { yaml } });
  assert.equal(sc.name, name);
  return { id: sc.id, name, trace };
}

/** Submits an experiment of the scenario through the API; returns its id. */
export async function createExperiment(scenarioId, { configurations, repetitions = 1 } = {}) {
  const body = { scenario_id: scenarioId, repetitions };
  if (configurations) body.configurations = configurations;
  const out = await api('POST', '/api/experiments', { json: body });
  const id = out.experiment?.id;
  assert.ok(id > 0, `experiment id in ${JSON.stringify(out)}`);
  return id;
}

const FINAL = new Set(['succeeded', 'failed', 'cancelled']);

/** Polls the API until the experiment is over; returns it (with its runs). */
export async function waitForExperiment(id, timeoutMs = 240_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const exp = await apiGet(`/api/experiments/${id}`);
    if (FINAL.has(exp.state)) return exp;
    if (Date.now() > until) throw new Error(`experiment ${id} still ${exp.state} after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/**
 * Shows the page as on an empty database: GET of the listed collections (API paths such as
 * '/api/experiments') answer the real response with no items. The specs share one database and
 * run in any order, so an empty list is only ever seen this way. Returns a function that stops it.
 */
export async function emptyLists(page, paths) {
  const match = (url) => paths.includes(url.pathname);
  const handler = async (route) => {
    if (route.request().method() !== 'GET') return route.fallback();
    const res = await route.fetch();
    const json = await res.json();
    await route.fulfill({ response: res, json: { ...json, items: [], total: 0 } });
  };
  await page.route(match, handler);
  return () => page.unroute(match, handler);
}

export async function cancelIfGoing(id) {
  const exp = await apiGet(`/api/experiments/${id}`);
  if (!FINAL.has(exp.state)) await api('POST', `/api/experiments/${id}/cancel`);
}

/** Formats like the UI (web/src/lib/format.ts fmtBps). */
export function fmtBps(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return `${(v / 1e9).toFixed(2)} Gbit/s`;
  if (a >= 1e6) return `${(v / 1e6).toFixed(2)} Mbit/s`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(1)} kbit/s`;
  return `${v.toFixed(0)} bit/s`;
}
