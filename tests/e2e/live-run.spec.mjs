// Submit and the live run view, on a scenario of this spec's own (cubic, reno, bbr, made through
// the API): the plan shows the run count and the estimate, BBR is left out, two runs are
// submitted; the run streams the link state and the senders' congestion window over SSE while it
// goes; a 12 dB fade set by hand on the run page reaches the emulator, and the stored telemetry of
// that run holds it (and the MODCOD step down ACM answered it with).
import assert from 'node:assert/strict';
import { ADMIN, apiGet, BASE, createScenario, idFromUrl, shot, signIn, useBrowser } from './fixture.mjs';

const ui = useBrowser();
let scenario;
let experimentId;
let controlledRun;

ui.step('submission: plan shows the run count and the estimate, then submit', async () => {
  const { page } = ui;
  scenario = await createScenario('live', { configurations: ['cubic', 'reno', 'bbr'] });
  await signIn(page, ADMIN);
  await page.goto(`${BASE}/#/scenarios/${scenario.id}`);
  await page.getByRole('heading', { name: `Scenario ${scenario.name}` }).waitFor();
  // every configuration is picked at first; this test compares only the first two
  const submit = page.getByRole('region', { name: 'Run an experiment' });
  await submit.getByTestId('plan-runs').getByText('3 runs').waitFor();
  await submit.getByRole('checkbox', { name: 'bbr' }).uncheck();
  await page.getByRole('heading', { name: 'Run an experiment' }).waitFor();
  await page.getByTestId('plan-runs').getByText('2 runs').waitFor();
  const estimate = await page.getByTestId('plan-estimate').innerText();
  assert.match(estimate, /\d+(\.\d)? s/);
  await submit.getByLabel('Repetitions').fill('2');
  await page.getByTestId('plan-runs').getByText('4 runs').waitFor();
  await submit.getByLabel('Repetitions').fill('1');
  await page.getByTestId('plan-runs').getByText('2 runs').waitFor();
  // a two-dimensional sweep multiplies the runs: 2 delays x 2 buffers x 2 configurations
  await submit.getByLabel('Sweep', { exact: true }).selectOption({ label: 'One-way delay (ms)' });
  await submit.getByLabel('Sweep: values').fill('250, 300');
  await page.getByTestId('plan-runs').getByText('4 runs').waitFor();
  await submit.getByLabel('Second sweep', { exact: true }).selectOption({ label: 'Buffer (packets)' });
  await submit.getByLabel('Second sweep: values').fill('1000, 2000');
  await page.getByTestId('plan-runs').getByText('8 runs').waitFor();
  await submit.getByLabel('Sweep', { exact: true }).selectOption({ label: 'No sweep' });
  await page.getByTestId('plan-runs').getByText('2 runs').waitFor();
  await shot(page, '05-submit-plan');
  await page.getByRole('button', { name: 'Submit 2 runs' }).click();
  await page.getByRole('heading', { name: /Experiment #\d+/ }).waitFor();
  experimentId = idFromUrl(page);
  assert.ok(experimentId > 0);
  ui.track(experimentId);
});

ui.step('live: the run streams the link state over SSE while it goes', async () => {
  const { page } = ui;
  const now = page.getByTestId('live-now');
  await now.waitFor({ timeout: 90_000 });
  assert.match(await now.innerText(), /MODCOD \d+, Es\/N0 [\d.]+ dB, queue \d+ packets/);
  await page.getByRole('figure', { name: 'MODCOD and Es/N0' }).waitFor();
  await shot(page, '06-experiment-live');
});

ui.step('live cwnd: the senders\' congestion window streams while the run goes', async () => {
  const { page } = ui;
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

ui.step('live control: a 12 dB fade set from the run page reaches the emulator', async () => {
  const { page } = ui;
  await page.getByRole('link', { name: 'Open the run for live control →' }).click();
  controlledRun = idFromUrl(page);
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

ui.step('the hand-set fade is in the stored telemetry of that run, and ACM answered it', async () => {
  const { page } = ui;
  await page.getByTestId('runs-done').getByText('2 of 2 runs finished').waitFor({ timeout: 150_000 });
  const exp = await apiGet(`/api/experiments/${experimentId}`);
  assert.equal(exp.state, 'succeeded', `runs: ${JSON.stringify(exp.runs.map((r) => [r.state, r.error]))}`);
  // Es/N0 7.73 dB - 0.5 dB margin -> 8PSK 2/3 (id 13) or lower
  const series = async (name) =>
    (await apiGet(`/api/runs/${controlledRun}/series/${name}?buckets=500`)).buckets;
  assert.ok(Math.max(...(await series('link.forward.attenuation_db')).map((b) => b.max)) >= 12);
  assert.ok(Math.min(...(await series('link.forward.modcod')).map((b) => b.min)) <= 13);
});
