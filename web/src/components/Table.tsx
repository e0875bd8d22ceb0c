import type { ReactNode } from 'react';

/** A column head: its text, or its content and whether the column holds numbers (right-aligned). */
export type Column = string | { label: ReactNode; num?: boolean };

/** A right-aligned column of numbers. */
export function num(label: ReactNode): Column {
  return { label, num: true };
}

export interface TableProps {
  /** What the table lists, for screen readers (and on screen unless `hideCaption`). */
  caption: ReactNode;
  hideCaption?: boolean;
  /** The column heads in order; null leaves a column out (one that does not apply here). */
  columns: readonly (Column | null)[];
  testId?: string;
  /** The body rows. */
  children: ReactNode;
}

/** The app's data table: scrolls sideways inside its box on a narrow screen. */
export function Table({ caption, hideCaption = false, columns, testId, children }: TableProps) {
  return (
    <div className="table-wrap">
      <table className="table" data-testid={testId}>
        <caption className={hideCaption ? 'visually-hidden' : undefined}>{caption}</caption>
        <thead>
          <tr>
            {columns.map((c, i) => {
              if (c === null) return null;
              const { label, num: isNum } = typeof c === 'string' ? { label: c, num: false } : c;
              return (
                <th scope="col" className={isNum ? 'num' : undefined} key={i}>
                  {label}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
