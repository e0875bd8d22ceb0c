import { describe, expect, it } from 'vitest';
import { chartDefs } from './runCharts.ts';
import { MAX_CHART_TERMINALS } from './terminals.ts';

const info = (...names: string[]) => names.map((name) => ({ name, points: 10 }));

describe('chartDefs', () => {
  it('draws a queue-depth and a queueing-delay chart with one line per forward traffic class', () => {
    const defs = chartDefs(
      info(
        'link.forward.queue_packets',
        'link.forward.class.ef.queue_packets',
        'link.forward.class.ef.queue_delay_ms',
        'link.forward.class.bulk-1.queue_packets',
        'link.forward.class.bulk-1.queue_delay_ms',
        'link.forward.class.bulk-1.sent_bytes',
      ),
    );
    expect(defs.map((d) => d.key)).toEqual(['queue', 'class-queue', 'class-delay']);
    const delay = defs.find((d) => d.key === 'class-delay');
    expect(delay?.series).toEqual([
      { name: 'link.forward.class.ef.queue_delay_ms', label: 'ef' },
      { name: 'link.forward.class.bulk-1.queue_delay_ms', label: 'bulk-1' },
    ]);
  });

  it('leaves the class charts out of a link without classes', () => {
    const defs = chartDefs(info('link.forward.queue_packets', 'tcp.srv1:5001-40000.cwnd'));
    expect(defs.map((d) => d.key)).toEqual(['cwnd', 'queue']);
  });

  it('draws each beam terminal\'s forward MODCOD and granted return capacity, one line per terminal', () => {
    const defs = chartDefs(
      info(
        'link.forward.modcod',
        'link.forward.terminal.clear.modcod',
        'link.forward.terminal.clear.esn0_db',
        'link.forward.terminal.rain_1.modcod',
        'link.return.terminal.clear.granted_kbps',
        'link.return.terminal.clear.requested_rbdc_kbps',
        'link.return.terminal.rain_1.granted_kbps',
      ),
    );
    expect(defs.map((d) => d.key)).toEqual(['modcod', 'terminal-modcod', 'terminal-granted']);
    expect(defs.find((d) => d.key === 'terminal-granted')).toEqual({
      key: 'terminal-granted',
      title: 'Granted return capacity per terminal',
      yLabel: 'kbit/s',
      series: [
        { name: 'link.return.terminal.clear.granted_kbps', label: 'clear' },
        { name: 'link.return.terminal.rain_1.granted_kbps', label: 'rain_1' },
      ],
    });
    expect(defs.find((d) => d.key === 'terminal-modcod')?.series.map((s) => [s.label, s.stepped])).toEqual([['clear', true], ['rain_1', true]]);
  });

  it('charts the first terminals of a large beam and says how many there are', () => {
    const names = Array.from({ length: MAX_CHART_TERMINALS + 5 }, (_, i) => `link.return.terminal.t${String(100 + i)}.granted_kbps`);
    const granted = chartDefs(info(...names)).find((d) => d.key === 'terminal-granted');
    expect(granted?.series).toHaveLength(MAX_CHART_TERMINALS);
    expect(granted?.title).toBe(`Granted return capacity per terminal, first ${String(MAX_CHART_TERMINALS)} of ${String(MAX_CHART_TERMINALS + 5)}`);
  });

  it('has no terminal charts without a beam', () => {
    const defs = chartDefs(info('link.forward.modcod', 'link.return.queue_packets'));
    expect(defs.some((d) => d.key.startsWith('terminal-'))).toBe(false);
  });
});
