// The UI end to end, against the real API, PostgreSQL and a worker running real testbeds:
// sign in, create a scenario from the quickstart template with the form (a local bound error and
// an API 422 shown inline), look at the trace it implies, submit, watch the run live over SSE,
// move its rain fade by hand (live control),
// open the finished comparison and check that the chart and the table show the stored numbers,
// export CSV, zoom a run's time series, add a scheme from the catalogue, watch the live cwnd,
// edit a link field beyond the main ones (bound error, save, read back), add a scheme that
// needs host settings, manage tokens, and check that a viewer cannot submit (or see the tokens
// page).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { ADMIN, apiGet, BASE, fmtBps, launch, shot, signIn, VIEWER } from './lib.mjs';

let close;
let page;
let problems;
let scenarioId;
let experimentId;
let controlledRun;

before(async () => {
  ({ page, problems, close } = await launch());
});

after(async () => {
  await close?.();
});

// The steps build on each other: after a failure the rest are skipped (with a screenshot of
// the page as it was) instead of each waiting out its timeout.
let failed = false;
const nav = (name) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
function step(name, fn) {
  test(name, async (t) => {
    if (failed) {
      t.skip('an earlier step failed');
      return;
    }
    try {
      await fn();
    } catch (err) {
      failed = true;
      await shot(page, `FAILED-${name.replace(/\W+/g, '-').slice(0, 40)}`).catch(() => undefined);
      throw err;
    }
  });
}

step('sign in: a wrong token is refused, the admin token opens the start page', async () => {
  await page.goto(`${BASE}/`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await shot(page, '01-sign-in');
  await page.getByLabel('API token').fill('sl_not-a-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('This token is unknown, revoked or expired.').waitFor();
  await signIn(page, ADMIN);
  await page.getByRole('heading', { name: 'Start here' }).waitFor();
  await page.getByText('No experiment yet.').waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('satlab.token')), ADMIN);
  await shot(page, '02-start-empty');
});

step('library and editor: create a scenario from the quickstart template with the form', async () => {
  await nav('Scenarios').click();
  await page.getByRole('heading', { name: 'Scenario library' }).waitFor();
  await page.getByText('No scenario yet.').waitFor();
  await page.getByRole('link', { name: 'New from the quickstart template' }).click();
  await page.getByRole('heading', { name: 'New scenario' }).waitFor();

  const name = page.getByLabel('Name', { exact: true }).first();
  await name.fill('e2e-quick');
  // a bound from the JSON Schema, checked as you type
  const duration = page.getByLabel('Duration (s)').first();
  await duration.fill('0');
  await page.getByText('must be > 0').first().waitFor();
  await duration.fill('6');
  const traffic = page.getByRole('group', { name: '1. bulk_tcp' });
  await traffic.getByLabel('Duration (s)').fill('6');
  // a fast ACM refresh makes the 150-tick quickstart fade last 3 s instead of 15
  await page.getByLabel('ACM refresh period (ms)').fill('20');
  await page.getByRole('group', { name: '3. bbr' }).getByRole('button', { name: 'Remove item 3' }).click();
  // the API's own rule (exactly one of bytes or duration_s) comes back as a 422, shown inline
  await traffic.getByLabel('Bytes', { exact: true }).fill('1000000');
  await page.getByRole('button', { name: 'Create scenario' }).click();
  await traffic.getByText('give exactly one of bytes or duration_s').waitFor();
  await shot(page, '03-editor-inline-error');
  await traffic.getByLabel('Bytes', { exact: true }).fill('');

  // the YAML view is the same document: comments and spelling of untouched lines survive
  await page.getByRole('tab', { name: 'YAML' }).click();
  const yaml = await page.getByLabel('Scenario YAML').inputValue();
  assert.match(yaml, /^name: e2e-quick$/m);
  assert.match(yaml, /^duration_s: 6$/m);
  assert.match(yaml, /acm: \{refresh_ms: 20, margin_db: 0\.5\}/);
  assert.match(yaml, /symbol_rate_baud: 5\.0e6 {8}# 5 Msym\/s: about 21 Mbit\/s useful at 32APSK 9\/10/);
  assert.doesNotMatch(yaml, /bbr/);
  await page.getByRole('tab', { name: 'Form' }).click();

  // the trace and what it implies on this link (9 dB peak: 8PSK 5/6 with a 0.5 dB margin)
  await page.getByText('Deepest point: 9.0 dB').waitFor();
  await page.getByText('MODCOD 15 (8PSK 5/6)').waitFor();
  await page.getByRole('button', { name: 'Create scenario' }).click();
  await page.getByRole('heading', { name: 'Scenario e2e-quick' }).waitFor();
  scenarioId = Number(new URL(page.url()).hash.split('/')[2]);
  assert.ok(scenarioId > 0);
  const files = await apiGet('/api/files');
  assert.ok(files.items.some((f) => f.name === 'traces/quickstart-fade.txt'), 'the template trace was uploaded');
  await page.getByText('Showing traces/quickstart-fade.txt (uploaded').waitFor();
  await shot(page, '04-editor-created');
});

step('scheme picker: a configuration from the catalogue joins the scenario', async () => {
  const picker = page.getByRole('region', { name: 'Add a transport scheme' });
  await picker.getByLabel('Scheme').selectOption({ label: 'TCP BBR (kernel)' });
  await picker.getByTestId('scheme-description').getByText(/bottleneck rate/).waitFor();
  await picker.getByRole('button', { name: 'Add to the scenario' }).click();
  await page.getByText('Added configuration from “TCP BBR (kernel)”').waitFor();
  await page.getByRole('group', { name: '3. bbr' }).waitFor();
  await shot(page, '04b-scheme-picker');
  await page.getByRole('button', { name: 'Save as new revision' }).click();
  await page.getByText('Saved as revision 2.').waitFor();
  const sc = await apiGet(`/api/scenarios/${scenarioId}`);
  const schemes = await apiGet('/api/schemes');
  // stored with the schema's defaults filled in: every field the catalogue gives is there as given
  const stored = sc.latest.spec.configurations.find((c) => c.name === 'bbr').transport;
  for (const [key, value] of Object.entries(schemes.find((s) => s.name === 'bbr').configuration.transport)) {
    assert.deepEqual(stored[key], value, key);
  }
  // it can be submitted; this test compares only the first two
  const submit = page.getByRole('region', { name: 'Run an experiment' });
  await submit.getByTestId('plan-runs').getByText('3 runs').waitFor();
  await submit.getByRole('checkbox', { name: 'bbr' }).uncheck();
});

step('submission: plan shows the run count and the estimate, then submit', async () => {
  await page.getByRole('heading', { name: 'Run an experiment' }).waitFor();
  await page.getByTestId('plan-runs').getByText('2 runs').waitFor();
  const estimate = await page.getByTestId('plan-estimate').innerText();
  assert.match(estimate, /\d+(\.\d)? s/);
  await page.getByRole('region', { name: 'Run an experiment' }).getByLabel('Repetitions').fill('2');
  await page.getByTestId('plan-runs').getByText('4 runs').waitFor();
  await page.getByRole('region', { name: 'Run an experiment' }).getByLabel('Repetitions').fill('1');
  await page.getByTestId('plan-runs').getByText('2 runs').waitFor();
  await shot(page, '05-submit-plan');
  await page.getByRole('button', { name: 'Submit 2 runs' }).click();
  await page.getByRole('heading', { name: /Experiment #\d+/ }).waitFor();
  experimentId = Number(new URL(page.url()).hash.split('/')[2]);
  assert.ok(experimentId > 0);
});

step('live: the run streams the link state over SSE while it goes', async () => {
  const now = page.getByTestId('live-now');
  await now.waitFor({ timeout: 90_000 });
  assert.match(await now.innerText(), /MODCOD \d+, Es\/N0 [\d.]+ dB, queue \d+ packets/);
  await page.getByRole('figure', { name: 'MODCOD and Es/N0' }).waitFor();
  await shot(page, '06-experiment-live');
});

step('live cwnd: the senders\' congestion window streams while the run goes', async () => {
  const cwnd = page.getByTestId('live-cwnd').first();
  await cwnd.waitFor({ timeout: 90_000 });
  // read both at once: the view moves on to the next run when one ends
  const [heading, text] = await page.evaluate(() => [
    document.getElementById(document.querySelector('[data-testid="live-cwnd"]').closest('section').getAttribute('aria-labelledby')).textContent,
    document.querySelector('[data-testid="live-cwnd"]').textContent,
  ]);
  const shown = Number(text);
  const runId = Number(/run #(\d+)/.exec(heading)[1]);
  await page.getByRole('figure', { name: 'Congestion window' }).locator('canvas').waitFor();
  await shot(page, '06a-experiment-live-cwnd');
  assert.ok(Number.isInteger(shown) && shown >= 1, `cwnd on screen: ${shown}`);
  // the number on screen is one the worker reported for that run (TCP_INFO in a heartbeat)
  const res = await fetch(`${BASE}/api/runs/${runId}/events?follow=false`, { headers: { Authorization: `Bearer ${ADMIN}` } });
  const reported = (await res.text())
    .split('\n')
    .filter((l) => l.startsWith('data: {"id"'))
    .flatMap((l) => JSON.parse(l.slice(6)).metrics?.tcp ?? [])
    .map((c) => c.cwnd);
  assert.ok(reported.includes(shown), `cwnd ${shown} not among the reported ${JSON.stringify(reported)}`);
});

step('live control: a 12 dB fade set from the run page reaches the emulator', async () => {
  await page.getByRole('link', { name: 'Open the run for live control →' }).click();
  controlledRun = Number(new URL(page.url()).hash.split('/')[2]);
  const control = page.getByRole('region', { name: 'Live control' });
  await control.waitFor();
  await control.getByLabel('Attenuation (dB)').fill('12');
  await control.getByRole('button', { name: 'Apply fade' }).click();
  const answer = control.getByText(/Emulator answered/);
  await Promise.race([
    answer.waitFor({ timeout: 15_000 }),
    control.getByRole('alert').waitFor({ timeout: 15_000 }).then(async () => {
      throw new Error(`control refused: ${await control.getByRole('alert').innerText()}`);
    }),
  ]);
  // clear sky 20 dB up, 20 - 12 dB down: Es/N0 7.73 dB at once (the MODCOD follows at the next
  // ACM report, a return-link delay later)
  assert.match(await answer.innerText(), /Emulator answered 200: forward now [^,]+, Es\/N0 7\.73 dB/);
  await shot(page, '06b-run-live-control');
  await page.getByRole('link', { name: /← Experiment #/ }).click();
  await page.getByRole('heading', { name: /Experiment #\d+/ }).waitFor();
});

step('results: the comparison shows the stored numbers; CSV export', async () => {
  await page.getByTestId('runs-done').getByText('2 of 2 runs finished').waitFor({ timeout: 150_000 });
  const exp = await apiGet(`/api/experiments/${experimentId}`);
  assert.equal(exp.state, 'succeeded', `runs: ${JSON.stringify(exp.runs.map((r) => [r.state, r.error]))}`);
  const bar = page.locator('rect[data-config="cubic"]');
  await bar.waitFor();
  const cmp = await apiGet(`/api/experiments/${experimentId}/comparison?baseline=cubic`);
  const entry = (c) => cmp.points[0].configurations.find((x) => x.configuration === c).metrics.goodput_bps;
  // the chart's marks carry the stored means; the labels and table show them formatted
  assert.equal(Number(await bar.getAttribute('data-value')), entry('cubic').mean);
  assert.equal(Number(await page.locator('rect[data-config="reno"]').getAttribute('data-value')), entry('reno').mean);
  assert.equal(await page.getByTestId('mean-cubic').innerText(), fmtBps(entry('cubic').mean));
  assert.equal(await page.getByTestId('ratio-reno').innerText(), entry('reno').ratio.toFixed(3));
  // the hand-set 12 dB fade is in the stored telemetry of that run, and ACM answered it:
  // Es/N0 7.73 dB - 0.5 dB margin -> 8PSK 2/3 (id 13) or lower
  const series = async (name) =>
    (await apiGet(`/api/runs/${controlledRun}/series/${name}?buckets=500`)).buckets;
  assert.ok(Math.max(...(await series('link.forward.attenuation_db')).map((b) => b.max)) >= 12);
  assert.ok(Math.min(...(await series('link.forward.modcod')).map((b) => b.min)) <= 13);
  await page.getByRole('heading', { name: 'Comparison' }).scrollIntoViewIfNeeded();
  await shot(page, '07-experiment-comparison');

  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Runs CSV' }).click()]);
  assert.equal(dl.suggestedFilename(), `experiment-${experimentId}-runs.csv`);
  const csv = readFileSync(await dl.path(), 'utf8').trim().split(/\r?\n/);
  assert.match(csv[0], /^run_id,configuration,sweep_value,repetition,seed,state,attempt,goodput_bps/);
  assert.equal(csv.length, 3);
  for (const r of exp.runs) {
    const row = csv.find((l) => l.startsWith(`${r.id},`));
    assert.ok(row, `run ${r.id} in the CSV`);
    assert.ok(row.includes(`,${r.summary.goodput_bps},`), 'goodput as stored');
  }
  const [chartCsv] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('figure', { name: /Goodput per configuration/ }).getByRole('button', { name: 'CSV' }).click(),
  ]);
  const lines = readFileSync(await chartCsv.path(), 'utf8').trim().split(/\r?\n/);
  assert.equal(lines[0], 'configuration,sweep_value,goodput_bps_mean,ci95_low,ci95_high,n');
  assert.ok(lines.some((l) => l.startsWith(`cubic,,${entry('cubic').mean},`)));
  const [svg] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('figure', { name: /Goodput per configuration/ }).getByRole('button', { name: 'SVG' }).click(),
  ]);
  assert.match(readFileSync(await svg.path(), 'utf8'), /^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
});

step('run: time series with zoom, losses by cause', async () => {
  const exp = await apiGet(`/api/experiments/${experimentId}`);
  const run = exp.runs.find((r) => r.configuration === 'cubic');
  await page.getByRole('link', { name: `#${run.id}`, exact: true }).click();
  await page.getByRole('heading', { name: 'Time series' }).waitFor();
  const modcod = page.getByRole('figure', { name: 'MODCOD and Es/N0 (forward)' });
  await modcod.locator('canvas').waitFor();
  await page.getByRole('figure', { name: 'Congestion window' }).locator('canvas').waitFor();
  assert.equal(await page.getByTestId('run-goodput').innerText(), fmtBps(run.summary.goodput_bps));
  const result = await apiGet(`/api/runs/${run.id}/result`);
  const retrans = Object.values(result.hosts).reduce((a, h) => a + h['Tcp.RetransSegs'], 0);
  const losses = page.getByTestId('losses');
  assert.equal(await losses.getByRole('row', { name: /TCP retransmitted segments/ }).getByRole('cell').first().innerText(), String(retrans));
  await shot(page, '08-run-series');
  // drag across the chart: the visible range is fetched again
  await modcod.locator('.u-over').scrollIntoViewIfNeeded();
const box = await modcod.locator('.u-over').boundingBox();
  await page.mouse.move(box.x + box.width * 0.2, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  await modcod.locator('xpath=..').getByText(/ between [\d.-]+ s and [\d.-]+ s/).waitFor();
  await shot(page, '09-run-zoomed');
});

step('start page leads to the experiment in one click', async () => {
  await nav('Start').click();
  await page.getByRole('link', { name: 'See the comparison →' }).click();
  await page.getByRole('heading', { name: `Experiment #${experimentId} · e2e-quick` }).waitFor();
  await page.getByText('What this comparison shows').waitFor();
});

step('a scenario with experiments is not deleted, and the page says why', async () => {
  await page.goto(`${BASE}/#/scenarios/${scenarioId}`);
  await page.getByRole('heading', { name: 'Scenario e2e-quick' }).waitFor();
  await page.getByRole('button', { name: 'Delete…' }).click();
  await page.getByRole('group', { name: 'Confirm deletion' }).getByRole('button', { name: 'Delete for good' }).click();
  await page.getByRole('alert').getByText(/used by experiments/).waitFor();
  assert.equal((await apiGet(`/api/scenarios/${scenarioId}`)).name, 'e2e-quick');
});

step('link settings beyond the main fields, and a scheme that needs host settings', async () => {
  await page.goto(`${BASE}/#/scenarios/${scenarioId}`);
  await page.getByRole('heading', { name: 'Scenario e2e-quick' }).waitFor();
  // every field of the emulator's configuration, from its own schema: the forward ACM hysteresis
  await page.getByText(/^All link settings/).click();
  const acm = page
    .getByRole('group', { name: 'Forward', exact: true })
    .getByRole('group', { name: 'Acm', exact: true });
  const hysteresis = acm.getByLabel('Hysteresis (dB)');
  await acm.getByText('range ≥ 0, ≤ 10').waitFor();
  await hysteresis.fill('12');
  await acm.getByRole('alert').getByText('must be ≤ 10').waitFor();
  await shot(page, '09b-link-bound-error');
  await hysteresis.fill('0.5');
  assert.equal(await acm.getByRole('alert').count(), 0);
  // a catalogue scheme whose entry has host_settings (withholding needs SACK off)
  const schemes = await apiGet('/api/schemes');
  const withhold = schemes.find((s) => s.name === 'withhold');
  assert.deepEqual(withhold.host_settings, { sack: false });
  const picker = page.getByRole('region', { name: 'Add a transport scheme' });
  await picker.getByLabel('Scheme').selectOption({ label: withhold.label });
  await picker.getByRole('button', { name: 'Add to the scenario' }).click();
  await page.getByRole('status').getByText('Set hosts.settings.sack: false (was true, the default)').waitFor();
  await page.getByRole('tab', { name: 'YAML' }).click();
  const yaml = await page.getByLabel('Scenario YAML').inputValue();
  assert.match(yaml, /hysteresis_db: 0\.5/);
  assert.match(yaml, /sack: false/);
  await page.getByRole('tab', { name: 'Form' }).click();
  await page.getByRole('button', { name: 'Save as new revision' }).click();
  await page.getByText('Saved as revision 3.').waitFor();
  const spec = (await apiGet(`/api/scenarios/${scenarioId}`)).latest.spec;
  assert.equal(spec.link.forward.acm.hysteresis_db, 0.5);
  assert.equal(spec.hosts.settings.sack, false);
  assert.ok(spec.configurations.some((c) => c.name === 'withhold' && c.receiver?.withhold));
});

step('tokens: an admin creates a token, it works, then revokes it', async () => {
  const whoami = async (token) => (await fetch(`${BASE}/api/whoami`, { headers: { Authorization: `Bearer ${token}` } })).status;
  await nav('Tokens').click();
  await page.getByRole('heading', { name: 'API tokens' }).waitFor();
  const form = page.getByRole('region', { name: 'New token' });
  await form.getByLabel('Name').fill('e2e-ci');
  await form.getByLabel('Role').selectOption('submitter');
  await form.getByLabel(/Expires in/).fill('1');
  await form.getByRole('button', { name: 'Create token' }).click();
  const secret = (await page.getByTestId('new-token').innerText()).trim();
  assert.equal(await whoami(secret), 200);
  const made = (await apiGet('/api/tokens')).find((t) => t.name === 'e2e-ci');
  assert.equal(made.role, 'submitter');
  const hours = (Date.parse(made.expires_at) - Date.parse(made.created_at)) / 3.6e6;
  assert.ok(Math.abs(hours - 24) < 0.1, `expires after ${hours} h`);
  const row = page.getByTestId(`token-${made.id}`);
  await row.getByText('active').waitFor();
  await shot(page, '11-tokens');
  await row.getByRole('button', { name: 'Revoke…' }).click();
  await row.getByRole('group', { name: 'Revoke e2e-ci?' }).getByRole('button', { name: 'Revoke', exact: true }).click();
  await row.getByText('revoked').waitFor();
  assert.equal(await whoami(secret), 401);
});

step('a viewer sees everything and cannot submit or edit', async () => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await signIn(page, VIEWER);
  await nav('Scenarios').click();
  await page.getByRole('link', { name: 'e2e-quick' }).waitFor();
  assert.equal(await page.getByRole('link', { name: /New from the quickstart template/ }).count(), 0);
  await page.getByRole('link', { name: 'e2e-quick' }).click();
  await page.getByText('You are signed in as a viewer').waitFor();
  assert.equal(await page.getByRole('heading', { name: 'Run an experiment' }).count(), 0);
  assert.equal(await page.getByRole('button', { name: /Create scenario|Save as new revision/ }).count(), 0);
  assert.ok(await page.getByLabel('Name', { exact: true }).first().isDisabled());
  await shot(page, '10-viewer-scenario');
  await page.goto(`${BASE}/#/experiments/${experimentId}`);
  await page.getByRole('heading', { name: 'Comparison' }).waitFor();
  assert.equal(await page.getByRole('button', { name: /Cancel|Retry/ }).count(), 0);
  assert.equal(await nav('Tokens').count(), 0);
  const status = await page.evaluate(async ([token, id]) => {
    const r = await fetch('/api/experiments', {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ scenario_id: id }),
    });
    return r.status;
  }, [VIEWER, scenarioId]);
  assert.equal(status, 403);
});

test('no page errors in the browser console', () => {
  assert.deepEqual(problems, []);
});
