"use client";
import { Children, cloneElement, isValidElement, type ReactElement, type ReactNode } from "react";
import { Empty, Loading } from "./widgets";

/** Each cell of a row gets its column's name (data-label): on a phone the row shows as a labelled card. */
function labelCells(row: ReactNode, headers: readonly string[]): ReactNode {
  if (!isValidElement<{ children?: ReactNode }>(row)) return row;
  let column = 0;
  const cells = Children.map(row.props.children, (cell) =>
    isValidElement(cell) && cell.type === "td" ? cloneElement(cell as ReactElement<{ "data-label"?: string }>, { "data-label": headers[column++] ?? "" }) : cell,
  );
  return cloneElement(row, undefined, cells);
}

/** A list as a table, with its loading and empty states and an optional "Load more". */
export function ListTable<T>({
  loading,
  rows,
  empty,
  headers,
  row,
  more,
  label,
}: {
  loading: boolean;
  rows: readonly T[];
  empty: ReactNode;
  headers: readonly string[];
  /** One or more <tr> for a row, keyed. */
  row: (item: T) => ReactNode;
  more?: { has: boolean; loading: boolean; load: () => void };
  /** The table's accessible name. */
  label?: string;
}) {
  if (loading) return <Loading />;
  if (!rows.length) return <Empty>{empty}</Empty>;
  return (
    <>
      <div className="table-wrap">
        <table className="cards" aria-label={label}>
          <thead>
            <tr>
              {headers.map((h, i) => (
                <th key={i} scope="col">
                  {h}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>{rows.map((item) => labelCells(row(item), headers))}</tbody>
        </table>
      </div>
      {more?.has ? (
        <button type="button" onClick={more.load} disabled={more.loading}>
          {more.loading ? "Loading…" : "Load more"}
        </button>
      ) : null}
    </>
  );
}
