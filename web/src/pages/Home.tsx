// The first-run path: after `make run` the quickstart comparison is already submitted, so the
// first thing a newcomer sees is that experiment, live or finished, one click away, with what it
// is about in plain words. Next comes the product's central comparison, geo-rain-comparison, which
// the scenario library holds from the service's first start (satlab library sync).
import { api, canSubmit, ok } from '../api/client.ts';
import { useAuth } from '../auth.tsx';
import { ErrorBox, Progress, StateBadge } from '../components/bits.tsx';
import { fmtDuration, fmtWhen } from '../lib/format.ts';
import { useAsync } from '../lib/useAsync.ts';

const RAIN = 'geo-rain-comparison';

export function Home() {
  const { who } = useAuth();
  const exps = useAsync(() => ok(api.GET('/api/experiments', { params: { query: { limit: 10 } } })), [], 3000);
  const items = exps.data?.items ?? [];
  const quick = items.find((e) => e.scenario_name === 'quickstart') ?? items[0];
  const done = quick ? Object.entries(quick.runs_by_state).reduce((n, [s, k]) => (s === 'queued' || s === 'running' ? n : n + k), 0) : 0;
  const total = quick ? Object.values(quick.runs_by_state).reduce((a, b) => a + b, 0) : 0;
  const rainScenario = useAsync(
    () => ok(api.GET('/api/scenarios', { params: { query: { name: RAIN, limit: 5 } } })),
    [],
  );
  const rain = rainScenario.data?.items.find((s) => s.name === RAIN);
  const rainExp = items.find((e) => e.scenario_name === RAIN);

  return (
    <div className="stack">
      <section className="card hero" aria-labelledby="start-title">
        <h2 id="start-title">Start here</h2>
        {quick ? (
          <>
            <p className="lead">
              {quick.scenario_name === 'quickstart' ? (
                <>
                  <strong>Your first comparison is {quick.state === 'succeeded' ? 'ready' : quick.state}:</strong> three
                  TCP congestion controls (CUBIC, Reno, BBR) each download over the same emulated geostationary satellite
                  link — a 500 ms round trip — while a 9 dB rain fade hits the downlink for ten seconds.
                </>
              ) : (
                <>
                  <strong>Latest experiment:</strong> {quick.scenario_name} ({(quick.matrix.configurations as string[] | undefined)?.join(', ')})
                </>
              )}
            </p>
            <p>
              Every configuration sees exactly the same channel (same fade trace, same random seed), so the differences
              you see come from the transport protocol, not from luck. The comparison shows how much data each one
              delivered (goodput), how the satellite link adapted its modulation to the rain (MODCOD), and what
              happened to each TCP sender.
            </p>
            <p className="hero__status">
              <StateBadge state={quick.state} /> {done} of {total} runs finished
              {quick.state === 'running' || quick.state === 'queued' ? <Progress value={total ? done / total : 0} label="experiment progress" /> : null}
              <span className="muted"> · estimated {fmtDuration(quick.estimate_s)} · submitted {fmtWhen(quick.created_at)}</span>
            </p>
            <p>
              <a className="btn btn--primary btn--big" href={`#/experiments/${quick.id}`}>
                {quick.state === 'succeeded' ? 'See the comparison' : 'Watch it run'} →
              </a>
            </p>
          </>
        ) : exps.loading ? (
          <p className="muted">Looking for experiments…</p>
        ) : (
          <>
            <p className="lead">No experiment yet.</p>
            <p>
              {canSubmit(who) ? (
                <>
                  Start from the quickstart template: a GEO link with a rain fade, CUBIC vs Reno vs BBR, about two
                  minutes. <a className="btn btn--primary" href="#/scenarios/new?template=quickstart">Open the quickstart template</a>
                </>
              ) : (
                <>Ask a submitter to run one; you can browse the scenarios meanwhile.</>
              )}
            </p>
          </>
        )}
      </section>
      {rain ? (
        <section className="card" aria-labelledby="rain-title">
          <h2 id="rain-title">Next: which transport helps when it rains?</h2>
          <p>
            <strong>{RAIN}</strong> puts every scheme SatLab carries side by side on a Ka-band GEO link in a real rain event
            (ITU-R P.1853, synthesised for Toulouse): CUBIC, NewReno, BETEN, Oracle ETEN, both CETEN forms, IP-ERN and
            a split-TCP PEP. As the fade deepens the link steps its modulation down
            nine times, and frames caught at the edge of decoding arrive with bit errors: the losses ETEN, CETEN and the
            PEP each answer differently. One bulk download and a stream of short web objects, three repetitions (about
            22 minutes).
          </p>
          <p>
            <a className="btn btn--primary" href={`#/scenarios/${rain.id}`}>
              Open the scenario{canSubmit(who) ? ' and run it' : ''} →
            </a>{' '}
            {rainExp ? (
              <a className="btn" href={`#/experiments/${rainExp.id}`}>
                Latest run: #{rainExp.id} <StateBadge state={rainExp.state} />
              </a>
            ) : null}
          </p>
        </section>
      ) : null}
      <ErrorBox error={exps.error} title="Cannot list experiments" />
      {items.length > 1 ? (
        <section className="card" aria-labelledby="recent-title">
          <h2 id="recent-title">Recent experiments</h2>
          <ul className="plain-list">
            {items.map((e) => (
              <li key={e.id}>
                <a href={`#/experiments/${e.id}`}>
                  #{e.id} {e.scenario_name}
                </a>{' '}
                <StateBadge state={e.state} /> <span className="muted">{fmtWhen(e.created_at)}</span>
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      <section className="card" aria-labelledby="how-title">
        <h2 id="how-title">How SatLab works</h2>
        <ol>
          <li><a href="#/scenarios">Scenarios</a> describe the link (delay, symbol rate, rain fade), the hosts and traffic, and the transport configurations to compare.</li>
          <li>Submitting one makes an <a href="#/experiments">experiment</a>: every configuration × sweep value × repetition is a run on a real testbed (Linux TCP over the emulated link).</li>
          <li>Results compare the configurations against a baseline with 95% confidence intervals; every run keeps its time series (cwnd, MODCOD, queue).</li>
        </ol>
      </section>
    </div>
  );
}
