import { describe, expect, it } from 'vitest';
import { columnsToCsv, csvField, toCsv } from './csv.ts';

describe('csv', () => {
  it('quotes only what needs quoting', () => {
    expect(csvField('cubic')).toBe('cubic');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField(null)).toBe('');
    expect(csvField(Number.NaN)).toBe('');
    expect(csvField(1e-7)).toBe('1e-7');
    expect(csvField(56422.06828213112)).toBe('56422.06828213112');
  });

  it('writes rows and columns', () => {
    expect(toCsv(['a', 'b'], [[1, 'x'], [2, undefined]])).toBe('a,b\r\n1,x\r\n2,\r\n');
    expect(columnsToCsv(['t', 'v'], [[0, 1, 2], [5, 6]])).toBe('t,v\r\n0,5\r\n1,6\r\n2,\r\n');
  });
});
