"use client";
import type { ReactNode } from "react";
import { Empty, Loading } from "./ui";

/** A list as a table, with its loading and empty states and an optional "Load more". */
export function ListTable<T>({
  loading,
  rows,
  empty,
  headers,
  row,
  more,
}: {
  loading: boolean;
  rows: readonly T[];
  empty: ReactNode;
  headers: readonly string[];
  /** One or more <tr> for a row, keyed. */
  row: (item: T) => ReactNode;
  more?: { has: boolean; loading: boolean; load: () => void };
}) {
  if (loading) return <Loading />;
  if (!rows.length) return <Empty>{empty}</Empty>;
  return (
    <>
      <div className="table-wrap">
        <table>
          <thead>
            <tr>
              {headers.map((h, i) => (
                <th key={i}>{h}</th>
              ))}
            </tr>
          </thead>
          <tbody>{rows.map(row)}</tbody>
        </table>
      </div>
      {more?.has ? (
        <button type="button" onClick={more.load} disabled={more.loading}>
          Load more
        </button>
      ) : null}
    </>
  );
}
