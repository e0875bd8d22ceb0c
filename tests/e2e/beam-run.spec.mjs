// A beam run's per-terminal view (issue 20): the library's two-terminal beam (one terminal in clear
// sky, one under 8 dB of rain, a DAMA return beam), cut to 8 s, run by the real worker. While it
// goes the run page lists both terminals with their own forward MODCOD (the rainy one's lower)
// and their return grants, as the heartbeats report them; once it is over the stored telemetry
// gives a chart of each terminal's granted return capacity, whose values the API also serves.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ADMIN, api, apiGet, BASE, createExperiment, shot, signIn, uniqueName, useBrowser, waitForExperiment } from './fixture.mjs';

const ui = useBrowser();
const DURATION_S = 8;
let experimentId;
let runId;

/** The library's beam scenario under a name of its own, shortened to DURATION_S. */
async function createBeamScenario() {
  const name = uniqueName('beam');
  const yaml = readFileSync(new URL('../../scenarios/beam-two-terminals.yaml', import.meta.url), 'utf8')
    .replace(/^name: beam-two-terminals$/m, `name: ${name}`)
    .replaceAll('duration_s: 20', `duration_s: ${DURATION_S}`);
  return (await api('POST', '/api/scenarios', { json: { yaml } })).id;
}

/** Polls the experiment until its run is running (or over); returns the run's id. */
async function runningRun(id, timeoutMs = 120_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const run = (await apiGet(`/api/experiments/${id}`)).runs[0];
    if (run && run.state !== 'queued') return run.id;
    if (Date.now() > until) throw new Error(`experiment ${id}: no run started within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The MODCOD id in a table cell such as "32APSK 9/10 (27)". */
const modcodId = (text) => Number(/\((\d+)\)$/.exec(text.trim())?.[1]);

ui.step('live: the run page lists each terminal with its own MODCOD and return grant', async () => {
  const { page } = ui;
  experimentId = await createExperiment(await createBeamScenario());
  ui.track(experimentId);
  runId = await runningRun(experimentId);
  await signIn(page, ADMIN);
  await page.goto(`${BASE}/#/runs/${runId}`);
  const table = page.getByTestId('beam-terminals');
  await table.waitFor({ timeout: 90_000 });
  // the rain fade's MODCOD shows once the ACM loop has answered it (a feedback delay after the start)
  await page.waitForFunction(
    () => {
      const id = (name) => Number(/\((\d+)\)$/.exec(document.querySelector(`[data-testid="terminal-${name}"] [data-testid="terminal-modcod"]`)?.textContent ?? '')?.[1]);
      return id('rainy') < id('clear');
    },
    undefined,
    { timeout: 30_000 },
  );
  const clear = modcodId(await table.getByTestId('terminal-clear').getByTestId('terminal-modcod').innerText());
  const rainy = modcodId(await table.getByTestId('terminal-rainy').getByTestId('terminal-modcod').innerText());
  assert.ok(rainy < clear, `rainy MODCOD ${rainy} is not below clear's ${clear}`);
  for (const name of ['clear', 'rainy']) {
    const granted = Number(await table.getByTestId(`terminal-${name}`).getByTestId('terminal-granted').innerText());
    assert.ok(Number.isFinite(granted) && granted >= 0, `${name}: granted ${granted}`);
  }
  await page.getByRole('figure', { name: /^Granted return capacity per terminal \(live/ }).waitFor();
  // its DAMA has no contention access: the run says so and the page shows no contention split
  assert.equal((await apiGet(`/api/runs/${runId}`)).return_contention, false);
  assert.equal(await page.getByTestId('beam-contention').count(), 0);
  await shot(page, '12-beam-run-live');
});

ui.step('finished: the stored telemetry charts each terminal\'s granted return capacity', async () => {
  const { page } = ui;
  const exp = await waitForExperiment(experimentId);
  assert.equal(exp.state, 'succeeded', `runs: ${JSON.stringify(exp.runs.map((r) => [r.state, r.error]))}`);
  await page.reload();
  const chart = page.getByRole('figure', { name: 'Granted return capacity per terminal', exact: true });
  const legend = chart.locator('.u-legend .u-label');
  await legend.last().waitFor({ timeout: 30_000 });
  assert.deepEqual((await legend.allInnerTexts()).slice(1), ['clear', 'rainy']);
  await page.getByRole('figure', { name: 'MODCOD per terminal (forward)', exact: true }).locator('canvas').waitFor();
  await shot(page, '12a-beam-run-terminals');
  // each terminal was granted at least its CRA (64 kbit/s) and both downloads' ACKs went back
  for (const name of ['clear', 'rainy']) {
    const { buckets } = await apiGet(`/api/runs/${runId}/series/link.return.terminal.${name}.granted_kbps?buckets=50`);
    assert.ok(Math.max(...buckets.map((b) => b.max)) >= 64, `${name}: ${JSON.stringify(buckets)}`);
  }
});
