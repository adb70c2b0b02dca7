"use client";
import { signOut } from "next-auth/react";
import Link from "next/link";
import { usePathname } from "next/navigation";
import { useEffect, useState } from "react";
import { useDashboardSettings } from "@/components/dashboard-settings";

const LINKS: readonly (readonly [href: string, label: string, simulatorOnly?: boolean])[] = [
  ["/dashboard", "Overview"],
  ["/dashboard/chats", "Inbox"],
  ["/dashboard/lines", "Lines"],
  ["/dashboard/pools", "Pools"],
  ["/dashboard/outbox", "Outbox"],
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
        </button>
      </div>
      <nav aria-label="Dashboard" id="dashboard-nav">
        {LINKS.filter(([, , simulatorOnly]) => simulator || !simulatorOnly).map(([href, label]) => (
          <Link key={href} href={href} aria-current={current(href) ? "page" : undefined}>
            {label}
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
