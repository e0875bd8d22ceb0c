// Shared helpers of the browser specs: Debian's chromium through playwright-core (resolved from
// web/node_modules), sign-in, screenshots, and direct API calls to read back stored numbers.
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(new URL('../../web/package.json', import.meta.url));
const { chromium } = require('playwright-core');

export const BASE = process.env.E2E_BASE ?? 'http://127.0.0.1:8700';
export const ADMIN = process.env.E2E_ADMIN_TOKEN ?? '';
export const VIEWER = process.env.E2E_VIEWER_TOKEN ?? '';
export const OUT = process.env.E2E_OUT ?? new URL('./screenshots', import.meta.url).pathname;
mkdirSync(OUT, { recursive: true });

export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), 'satlab-e2e-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.E2E_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    acceptDownloads: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      '--no-first-run',
    ],
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

export async function signIn(page, token) {
  await page.goto(`${BASE}/#/`);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

export async function shot(page, name) {
  await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
}

export async function apiGet(path, token = ADMIN) {
  const res = await fetch(`${BASE}${path}`, { headers: { Authorization: `Bearer ${token}` } });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.json();
}

/** Formats like the UI (web/src/lib/format.ts fmtBps). */
export function fmtBps(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return `${(v / 1e9).toFixed(2)} Gbit/s`;
  if (a >= 1e6) return `${(v / 1e6).toFixed(2)} Mbit/s`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(1)} kbit/s`;
  return `${v.toFixed(0)} bit/s`;
}
