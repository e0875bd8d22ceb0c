// CSV (RFC 4180): fields with a comma, quote, CR or LF are quoted, quotes doubled; lines end CRLF.
// Numbers are written with full precision; null/undefined/NaN become empty fields.

export type Cell = string | number | boolean | null | undefined;

export function csvField(v: Cell): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '';
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function toCsv(header: readonly string[], rows: readonly (readonly Cell[])[]): string {
  return [header, ...rows].map((r) => r.map(csvField).join(',')).join('\r\n') + '\r\n';
}

/** Columns of equal length (x first) as CSV rows. */
export function columnsToCsv(header: readonly string[], columns: readonly (readonly Cell[])[]): string {
  const n = Math.max(0, ...columns.map((c) => c.length));
  const rows: Cell[][] = [];
  for (let i = 0; i < n; i++) rows.push(columns.map((c) => c[i]));
  return toCsv(header, rows);
}

/** Makes the browser save a file. */
export function download(filename: string, content: Blob | string, type = 'text/csv'): void {
  const blob = typeof content === 'string' ? new Blob([content], { type }) : content;
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => {
    URL.revokeObjectURL(url);
  }, 10_000);
}
