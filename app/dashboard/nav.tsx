"use client";
import { useQuery } from "@tanstack/react-query";
import { signOut } from "next-auth/react";
import Link from "next/link";
import { usePathname } from "next/navigation";
import { useEffect, useState } from "react";
import { useDashboardSettings } from "@/components/dashboard-settings";
import styles from "@/components/approvals.module.css";
import { useTRPC } from "@/lib/trpc";

const LINKS: readonly (readonly [href: string, label: string, simulatorOnly?: boolean])[] = [
  ["/dashboard", "Overview"],
  ["/dashboard/chats", "Inbox"],
  ["/dashboard/lines", "Lines"],
  ["/dashboard/pools", "Pools"],
  ["/dashboard/outbox", "Outbox"],
  ["/dashboard/approvals", "Approvals"],
  ["/dashboard/webhooks", "Webhooks"],
  ["/dashboard/keys", "API keys"],
  ["/dashboard/sandbox", "Sandbox"],
  ["/dashboard/simulator", "Simulator", true],
];

/** The sidebar; on a phone, a bar with a Menu button that opens the same links. */
export function Nav({ email }: { email: string }) {
  const path = usePathname();
  const { simulator } = useDashboardSettings();
  const [open, setOpen] = useState(false);
  // Sends waiting for approval; the approvals page refreshes it live, elsewhere a slow poll.
  const trpc = useTRPC();
  const waiting = useQuery({ ...trpc.outbox.approvalCount.queryOptions(), refetchInterval: 30_000 }).data ?? 0;
  // A link followed closes the menu.
  useEffect(() => setOpen(false), [path]);
  const current = (href: string) => (href === "/dashboard" ? path === href : path.startsWith(href));
  return (
    <aside className="sidebar" data-open={open || undefined}>
      <div className="sidebar-bar">
        <Link className="brand" href="/dashboard">
          <img src="/icon.svg" alt="" width={22} height={22} /> Relay
        </Link>
        <button type="button" className="menu-button" aria-expanded={open} aria-controls="dashboard-nav" onClick={() => setOpen(!open)}>
          {open ? "Close" : "Menu"}
          {!open && waiting ? (
            <>
              <span className={styles.navCount} aria-hidden="true">
                {waiting}
              </span>
              <span className="visually-hidden"> ({waiting} waiting for approval)</span>
            </>
          ) : null}
        </button>
      </div>
      <nav aria-label="Dashboard" id="dashboard-nav">
        {LINKS.filter(([, , simulatorOnly]) => simulator || !simulatorOnly).map(([href, label]) => (
          <Link key={href} href={href} aria-current={current(href) ? "page" : undefined}>
            {label}
            {href === "/dashboard/approvals" && waiting ? (
              <>
                <span className={styles.navCount} data-testid="approvals-count" aria-hidden="true">
                  {waiting}
                </span>
                <span className="visually-hidden"> ({waiting} waiting)</span>
              </>
            ) : null}
          </Link>
        ))}
        <a href="/docs" target="_blank" rel="noopener">
          API reference ↗
        </a>
      </nav>
      <div className="who">
        <div>{email}</div>
        <button type="button" onClick={() => void signOut({ callbackUrl: "/sign-in" })}>
          Sign out
        </button>
      </div>
    </aside>
  );
}
