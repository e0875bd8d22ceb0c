import { render } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import type { Verdict } from '../api/client.ts';
import { fmtSweep } from '../lib/format.ts';
import { ExpectationsTable } from './ExpectationsTable.tsx';

function claim(over: Partial<Verdict>): Verdict {
  return {
    id: 'beten-goodput-high-ber',
    claim: "BETEN's goodput is 2.4-3x NewReno's at BER 1.56e-5",
    source: { paper: 'ETEN report (BBN TR 8333)', section: '5.1', figure: 'Fig. 4' },
    measure: 'ratio(goodput_bps, beten/newreno)',
    at: { 'link.forward.bit_errors.ber': 1.56e-5 },
    band: [2.0, 4.5],
    direction: '>',
    neutral: 1.0,
    verdict: 'holds',
    mean: 2.61,
    ci: [2.2, 3.05],
    n: 3,
    note: 'ber=1.56e-05: 2.61 [2.2, 3.05] (n=3) holds',
    linux_note: null,
    ...over,
  };
}

describe('ExpectationsTable', () => {
  it('labels sweep values of one or two dimensions', () => {
    expect(fmtSweep([1e-5, false], ['link.forward.bit_errors.ber', 'hosts.settings.rack'])).toBe('ber=1e-5, rack=false');
    expect(fmtSweep(true)).toBe('true');
  });

  it('shows each expectation with its measured mean, interval, band and coloured verdict', () => {
    const { getByTestId } = render(
      <ExpectationsTable
        claims={[
          claim({}),
          claim({ id: 'mean-fct', measure: 'mean(completion_s, beten)', at: null, band: [1, 2], direction: null, neutral: 0, verdict: 'fails', mean: 3.5, ci: [3, 4], linux_note: 'Linux TCP uses RACK' }),
          claim({ id: 'gone', verdict: 'no-data', mean: null, ci: null, n: 0, note: 'no runs of beten' }),
          claim({ id: 'side', verdict: 'direction', mean: 1.4, ci: null }),
        ]}
      />,
    );
    const first = getByTestId('claim-beten-goodput-high-ber');
    expect(first.textContent).toContain('2.61 [2.20, 3.05]');
    expect(first.textContent).toContain('2.00 – 4.50');
    expect(first.textContent).toContain('ETEN report (BBN TR 8333), §5.1, Fig. 4');
    expect(first.textContent).toContain('at ber=0.0000156');
    expect(getByTestId('verdict-beten-goodput-high-ber').className).toContain('claim-verdict--holds');
    const fct = getByTestId('claim-mean-fct');
    expect(fct.textContent).toContain('at every sweep point');
    expect(fct.textContent).toContain('Linux TCP uses RACK');
    expect(getByTestId('verdict-mean-fct').className).toContain('claim-verdict--fails');
    expect(getByTestId('verdict-gone').textContent).toBe('no data');
    expect(getByTestId('claim-gone').textContent).toContain('—');
    expect(getByTestId('verdict-side').textContent).toBe('direction only');
  });
});
