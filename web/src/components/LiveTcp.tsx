// The senders' congestion windows while a run goes: one series per connection from the TCP_INFO
// sample each heartbeat carries (lib/live.ts), and the newest values in words.
import { fmtBps, fmtNum } from '../lib/format.ts';
import { latestTcp, tcpColumn, type LiveState } from '../lib/live.ts';
import { TimeChart } from './TimeChart.tsx';

// The kernel reports an unset slow-start threshold as 0x7fffffff ("infinite").
const SSTHRESH_UNSET = 0x7fffffff;

export function LiveCwndChart({ live, name, xLabel = 'time (s)' }: { live: LiveState; name: string; xLabel?: string }) {
  if (live.conns.length === 0) {
    return <p className="muted">Congestion window: waiting for the senders' first TCP_INFO sample…</p>;
  }
  return (
    <TimeChart
      title="Congestion window"
      name={name}
      xLabel={xLabel}
      yLabel="segments"
      xs={live.samples.map((s) => s.t)}
      series={live.conns.map((c) => ({ label: `${c} cwnd`, values: tcpColumn(live, c, 'cwnd') }))}
      height={180}
    />
  );
}

export function LiveTcpNow({ live }: { live: LiveState }) {
  const now = latestTcp(live);
  if (now.length === 0) return null;
  return (
    <ul className="plain-list" data-testid="live-tcp">
      {now.map((c) => (
        <li key={`${c.host}:${String(c.sport)}`}>
          {c.host} → :{c.dport} ({c.cc ?? '?'}): cwnd <strong data-testid="live-cwnd">{c.cwnd ?? '—'}</strong> segments, ssthresh{' '}
          {c.ssthresh === null ? '—' : c.ssthresh >= SSTHRESH_UNSET ? '∞' : c.ssthresh}, srtt{' '}
          {c.srtt_us === null ? '—' : `${fmtNum(c.srtt_us / 1000)} ms`}, delivery rate {fmtBps(c.delivery_rate_bps)}, retransmitted{' '}
          {c.retrans_total ?? '—'}
        </li>
      ))}
    </ul>
  );
}
