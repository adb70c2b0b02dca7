"use client";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/lib/trpc";

/** The account's lines for pickers: its own first, the shared sandbox line last. */
export function useLines() {
  const trpc = useTRPC();
  const query = useQuery(trpc.lines.list.queryOptions());
  const lines = [...(query.data?.data ?? [])].sort((a, b) => Number(a.is_sandbox) - Number(b.is_sandbox));
  return { ...query, lines };
}

type LineOption = { id: string; handle: string; label: string | null; is_sandbox: boolean };

export const lineName = (l: LineOption) => (l.is_sandbox ? `Sandbox (${l.handle})` : l.label ? `${l.label} (${l.handle})` : l.handle);

/** A <select> of lines by handle; with `all`, first an option for every line (value ""). */
export function LineSelect({
  lines,
  value,
  onChange,
  name,
  all,
}: {
  lines: LineOption[];
  value?: string;
  onChange?: (handle: string) => void;
  name?: string;
  all?: string;
}) {
  return (
    <label>
      Line
      <select name={name} value={value} onChange={onChange ? (e) => onChange(e.target.value) : undefined} required={!all}>
        {all ? <option value="">{all}</option> : null}
        {lines.map((l) => (
          <option key={l.id} value={l.handle}>
            {lineName(l)}
          </option>
        ))}
      </select>
    </label>
  );
}

/** "All lines" and each line: the filters of the inbox and the outbox. */
export const LineFilter = (props: { lines: LineOption[]; value: string; onChange: (handle: string) => void }) => <LineSelect {...props} all="All lines" />;
