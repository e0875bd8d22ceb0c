// The link and the senders while a run goes (lib/live.ts): the emulator's forward link as the
// heartbeats report it, the senders' congestion windows (one series per connection from the
// TCP_INFO sample each heartbeat carries), and the newest TCP values in words.
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

export interface LiveLinkChartsProps {
  live: LiveState;
  /** file name stem of the exports: `<name>-throughput`, `<name>-modcod`, ... */
  name: string;
  /** appended to each chart's title */
  titleSuffix?: string;
  xLabel?: string;
  /** the left axis of the MODCOD and Es/N0 chart */
  esn0Label?: string;
}

/** Throughput, MODCOD and Es/N0, queue depth and congestion window, two charts a row. */
export function LiveLinkCharts({ live, name, titleSuffix = '', xLabel = 'time (s)', esn0Label = 'dB' }: LiveLinkChartsProps) {
  const s = live.samples;
  const xs = s.map((x) => x.t);
  return (
    <div className="grid2">
      <TimeChart
        title={`Throughput${titleSuffix}`}
        name={`${name}-throughput`}
        xLabel={xLabel}
        yLabel="Mbit/s"
        xs={xs}
        series={[
          { label: 'delivered (Mbit/s)', values: s.map((x) => (x.throughputBps === null ? null : x.throughputBps / 1e6)) },
          { label: 'useful rate (Mbit/s)', values: s.map((x) => x.usefulRateBps / 1e6) },
        ]}
        height={180}
      />
      <TimeChart
        title={`MODCOD and Es/N0${titleSuffix}`}
        name={`${name}-modcod`}
        xLabel={xLabel}
        yLabel={esn0Label}
        yRightLabel="MODCOD"
        xs={xs}
        series={[
          { label: 'Es/N0 (dB)', values: s.map((x) => x.esn0Db) },
          { label: 'MODCOD', values: s.map((x) => x.modcod), right: true, stepped: true },
        ]}
        height={180}
      />
      <TimeChart
        title={`Queue depth${titleSuffix}`}
        name={`${name}-queue`}
        xLabel={xLabel}
        yLabel="packets"
        xs={xs}
        series={[{ label: 'queue (packets)', values: s.map((x) => x.queuePackets) }]}
        height={180}
      />
      <LiveCwndChart live={live} name={`${name}-cwnd`} xLabel={xLabel} />
    </div>
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
