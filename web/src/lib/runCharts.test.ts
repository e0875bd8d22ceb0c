import { describe, expect, it } from 'vitest';
import { chartDefs } from './runCharts.ts';

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
});
