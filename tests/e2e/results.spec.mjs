// Results and comparison, on a finished two-run experiment (cubic vs reno) of this spec's own,
// made through the API: the comparison's chart and table show the numbers the API stored; runs
// CSV, chart CSV and SVG exports read back; both runs' time series overlaid; a run's time series, losses by cause and zoom; the
// start page leads to the experiment in one click; a scenario with experiments is not deleted.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  ADMIN, apiGet, BASE, createExperiment, createScenario, fmtBps, shot, signIn, useBrowser,
} from './fixture.mjs';

const ui = useBrowser();
let scenario;
let experimentId;

ui.step('results: the comparison shows the stored numbers; CSV export', async () => {
  const { page } = ui;
  scenario = await createScenario('results', { configurations: ['cubic', 'reno'] });
  experimentId = await createExperiment(scenario.id);
  ui.track(experimentId);
  await signIn(page, ADMIN);
  await page.goto(`${BASE}/#/experiments/${experimentId}`);
  await page.getByRole('heading', { name: /Experiment #\d+/ }).waitFor();
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

ui.step('comparison: both runs\' time series on one chart, their losses side by side', async () => {
  const { page } = ui;
  const exp = await apiGet(`/api/experiments/${experimentId}`);
  const legend = (name) => page.getByRole('figure', { name }).locator('.u-legend');
  for (const r of exp.runs) await legend('MODCOD (forward)').getByText(`${r.configuration} (run #${r.id})`, { exact: true }).waitFor();
  await page.getByLabel('Series', { exact: true }).selectOption({ label: 'TCP delivery rate' });
  for (const r of exp.runs) await legend('TCP delivery rate').getByText(`${r.configuration} (run #${r.id})`, { exact: true }).waitFor();
  const row = page.getByTestId('overlay-losses').getByRole('row', { name: /TCP retransmitted segments/ });
  const want = [];
  for (const r of exp.runs) {
    const result = await apiGet(`/api/runs/${r.id}/result`);
    want.push(String(Object.values(result.hosts).reduce((a, h) => a + h['Tcp.RetransSegs'], 0)));
  }
  assert.deepEqual(await row.getByRole('cell').allInnerTexts(), want);
  await shot(page, '07c-experiment-side-by-side');
});

ui.step('report: one HTML file with every section opens offline', async () => {
  const { page } = ui;
  const exp = await apiGet(`/api/experiments/${experimentId}`);
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Report' }).click()]);
  assert.equal(dl.suggestedFilename(), `satlab-experiment-${experimentId}.html`);
  const file = join(mkdtempSync(join(tmpdir(), 'satlab-report-')), dl.suggestedFilename());
  await dl.saveAs(file); // as a user saves it: the .html name makes the browser render it
  const report = await page.context().newPage();
  const fetched = [];
  report.on('request', (r) => { fetched.push(r.url()); });
  await report.goto(`file://${file}`);
  assert.deepEqual(fetched.filter((u) => !u.startsWith('file:')), [], 'the report loads nothing');
  await report.getByRole('heading', { name: `SatLab experiment ${experimentId}: ${exp.scenario_name}` }).waitFor();
  for (const section of ['Link', 'Configurations', 'Comparison with cubic', 'Expectations', 'Over time', 'Runs', 'Scenario']) {
    await report.getByRole('heading', { name: section, exact: true }).waitFor();
  }
  for (const r of exp.runs) {
    assert.equal(await report.getByRole('row', { name: new RegExp(`^${r.id} ${r.configuration} `) }).count(), 1, `run ${r.id} listed`);
  }
  await shot(report, '07b-experiment-report');
  await report.close();
  rmSync(dirname(file), { recursive: true });
});

ui.step('run: time series with zoom, losses by cause', async () => {
  const { page } = ui;
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

// The start page shows the latest experiment: this spec's, as long as no other spec submits one
// at the same time (run.sh runs the spec files one at a time).
ui.step('start page leads to the experiment in one click', async () => {
  const { page, nav } = ui;
  await nav('Start').click();
  await page.getByRole('link', { name: 'See the comparison →' }).click();
  await page.getByRole('heading', { name: `Experiment #${experimentId} · ${scenario.name}` }).waitFor();
  await page.getByText('What this comparison shows').waitFor();
});

ui.step('a scenario with experiments is not deleted, and the page says why', async () => {
  const { page } = ui;
  await page.goto(`${BASE}/#/scenarios/${scenario.id}`);
  await page.getByRole('heading', { name: `Scenario ${scenario.name}` }).waitFor();
  await page.getByRole('button', { name: 'Delete…' }).click();
  await page.getByRole('group', { name: 'Confirm deletion' }).getByRole('button', { name: 'Delete for good' }).click();
  await page.getByRole('alert').getByText(/used by experiments/).waitFor();
  assert.equal((await apiGet(`/api/scenarios/${scenario.id}`)).name, scenario.name);
});
