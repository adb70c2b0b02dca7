"use client";
import { signOut } from "next-auth/react";
import Link from "next/link";
import { usePathname } from "next/navigation";

const LINKS = [
  ["/dashboard", "Overview"],
  ["/dashboard/keys", "API keys"],
  ["/dashboard/lines", "Lines"],
  ["/dashboard/chats", "Chats"],
  ["/dashboard/webhooks", "Webhooks"],
  ["/dashboard/outbox", "Outbox"],
  ["/dashboard/sandbox", "Sandbox"],
  ["/dashboard/simulator", "Simulator"],
] as const;

export function Nav({ email }: { email: string }) {
  const path = usePathname();
  const current = (href: string) => (href === "/dashboard" ? path === href : path.startsWith(href));
  return (
    <aside className="sidebar">
      <Link className="brand" href="/dashboard">
        Relay
      </Link>
      <nav aria-label="Dashboard">
        {LINKS.map(([href, label]) => (
          <Link key={href} href={href} aria-current={current(href) ? "page" : undefined}>
            {label}
          </Link>
        ))}
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
