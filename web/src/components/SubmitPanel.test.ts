import { describe, expect, it } from 'vitest';
import { sweepOf } from './SubmitPanel.tsx';

const dim = (choice: string, values: string, other = '') => ({ choice, other, values });

describe('sweepOf', () => {
  it('is no sweep without a first dimension, whatever the second says', () => {
    expect(sweepOf(dim('', ''), dim('forward.delay_ms', '250'))).toBeUndefined();
  });
  it('makes one dimension with numbers, booleans and strings', () => {
    expect(sweepOf(dim('forward.delay_ms', '250, 300'), dim('', ''))).toEqual({ path: 'forward.delay_ms', values: [250, 300] });
    expect(sweepOf(dim('other', 'true, false, cubic', 'hosts.settings.sack'), dim('', ''))).toEqual({
      path: 'hosts.settings.sack',
      values: [true, false, 'cubic'],
    });
  });
  it('makes two dimensions in order', () => {
    expect(sweepOf(dim('forward.bit_errors.ber', '1e-6,1e-5'), dim('forward.queue.limit_packets', '100'))).toEqual([
      { path: 'forward.bit_errors.ber', values: [1e-6, 1e-5] },
      { path: 'forward.queue.limit_packets', values: [100] },
    ]);
  });
  it('leaves a field with no path out (another field chosen, none typed)', () => {
    expect(sweepOf(dim('forward.delay_ms', '250'), dim('other', '1', ' '))).toEqual({ path: 'forward.delay_ms', values: [250] });
  });
});
