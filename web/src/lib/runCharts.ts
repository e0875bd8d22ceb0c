// The charts of a finished run, from the names of the series the API stored for it
// (api/satlab/service/results.py: `tcp.<conn>.<field>`, `link.<direction>.<field>`,
// `link.<direction>.class.<name>.<field>`, on a beam `link.<direction>.terminal.<name>.<field>`).
// A chart without any of its series is left out, so a run without a beam has no terminal charts.
import type { SeriesInfo } from '../api/client.ts';
import { MAX_CHART_TERMINALS } from './terminals.ts';

export interface ChartDef {
  key: string;
  title: string;
  yLabel: string;
  yRightLabel?: string;
  series: { name: string; label: string; scale?: number; right?: boolean; stepped?: boolean }[];
}

function connections(series: SeriesInfo[]): string[] {
  return [...new Set(series.filter((s) => s.name.startsWith('tcp.')).map((s) => s.name.replace(/^tcp\./, '').replace(/\.[a-z_]+$/, '')))];
}

/** The forward queue's traffic classes, from their series (`link.forward.class.<name>.<field>`). */
function forwardClasses(series: SeriesInfo[]): string[] {
  const prefix = 'link.forward.class.';
  return [...new Set(series.filter((s) => s.name.startsWith(prefix)).map((s) => s.name.slice(prefix.length).replace(/\.[a-z_]+$/, '')))];
}

/** The names of a direction's beam terminals, from their series (`link.<direction>.terminal.<name>.<field>`). */
export function beamTerminals(series: SeriesInfo[], direction: 'forward' | 'return'): string[] {
  const prefix = `link.${direction}.terminal.`;
  return [...new Set(series.filter((s) => s.name.startsWith(prefix)).map((s) => s.name.slice(prefix.length).replace(/\.[a-z_]+$/, '')))];
}

/** A per-terminal chart's title suffix when it draws only the first MAX_CHART_TERMINALS. */
export function chartedOf(terminals: string[]): string {
  return terminals.length > MAX_CHART_TERMINALS ? `, first ${String(MAX_CHART_TERMINALS)} of ${String(terminals.length)}` : '';
}

export function chartDefs(series: SeriesInfo[]): ChartDef[] {
  const has = new Set(series.map((s) => s.name));
  const conns = connections(series);
  const classes = forwardClasses(series);
  const forwardTerminals = beamTerminals(series, 'forward');
  const returnTerminals = beamTerminals(series, 'return');
  const defs: ChartDef[] = [
    {
      key: 'throughput',
      title: 'Throughput',
      yLabel: 'Mbit/s',
      series: [
        ...conns.map((c) => ({ name: `tcp.${c}.delivery_rate_bps`, label: `${c} delivery rate`, scale: 1e-6 })),
        { name: 'link.forward.useful_rate_bps', label: 'link useful rate', scale: 1e-6 },
        // A beam: the carrier's (the line above is then its first terminal's).
        { name: 'link.forward.carrier_useful_rate_bps', label: 'carrier useful rate', scale: 1e-6 },
      ],
    },
    { key: 'cwnd', title: 'Congestion window', yLabel: 'packets', series: conns.map((c) => ({ name: `tcp.${c}.cwnd`, label: `${c} cwnd` })) },
    {
      key: 'modcod',
      title: 'MODCOD and Es/N0 (forward)',
      yLabel: 'dB',
      yRightLabel: 'MODCOD',
      series: [
        { name: 'link.forward.esn0_db', label: 'Es/N0 (dB)' },
        { name: 'link.forward.attenuation_db', label: 'attenuation (dB)' },
        { name: 'link.forward.modcod', label: 'MODCOD', right: true, stepped: true },
      ],
    },
    { key: 'queue', title: 'Queue depth (forward)', yLabel: 'packets', series: [{ name: 'link.forward.queue_packets', label: 'queue (packets)' }] },
    {
      key: 'class-queue',
      title: 'Queue depth per class (forward)',
      yLabel: 'packets',
      series: classes.map((c) => ({ name: `link.forward.class.${c}.queue_packets`, label: c })),
    },
    {
      key: 'class-delay',
      title: 'Queueing delay per class (forward)',
      yLabel: 'ms',
      series: classes.map((c) => ({ name: `link.forward.class.${c}.queue_delay_ms`, label: c })),
    },
    {
      key: 'terminal-modcod',
      title: `MODCOD per terminal (forward)${chartedOf(forwardTerminals)}`,
      yLabel: 'MODCOD',
      series: forwardTerminals.slice(0, MAX_CHART_TERMINALS).map((t) => ({ name: `link.forward.terminal.${t}.modcod`, label: t, stepped: true })),
    },
    {
      key: 'terminal-granted',
      title: `Granted return capacity per terminal${chartedOf(returnTerminals)}`,
      yLabel: 'kbit/s',
      series: returnTerminals.slice(0, MAX_CHART_TERMINALS).map((t) => ({ name: `link.return.terminal.${t}.granted_kbps`, label: t })),
    },
    { key: 'rtt', title: 'Smoothed RTT', yLabel: 'ms', series: conns.map((c) => ({ name: `tcp.${c}.srtt_us`, label: `${c} srtt`, scale: 1e-3 })) },
  ];
  return defs.map((d) => ({ ...d, series: d.series.filter((s) => has.has(s.name)) })).filter((d) => d.series.length > 0);
}

