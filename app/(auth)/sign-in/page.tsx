"use client";
import { signIn } from "next-auth/react";
import Link from "next/link";
import { useRouter, useSearchParams } from "next/navigation";
import { type FormEvent, Suspense, useState } from "react";
import { safeCallbackPath } from "@/lib/safe-callback";
import { CredentialFields } from "../credential-fields";

function SignInForm() {
  const router = useRouter();
  const next = useSearchParams().get("callbackUrl");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    setBusy(true);
    setError(null);
    const res = await signIn("credentials", { email: String(form.get("email")), password: String(form.get("password")), redirect: false });
    setBusy(false);
    if (res?.ok) router.push(safeCallbackPath(next, window.location.origin));
    else if (res?.error === "rate_limit_exceeded") setError("Too many sign-in attempts. Wait a few minutes, then try again.");
    else setError("Wrong email or password.");
  }

  return (
    <form className="panel stack" onSubmit={submit}>
      <h1>Sign in to Relay</h1>
      <CredentialFields />
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      <button className="primary" type="submit" disabled={busy}>
        {busy ? "Signing in…" : "Sign in"}
      </button>
      <p className="small muted">
        No account? <Link href="/sign-up">Sign up</Link>
      </p>
    </form>
  );
}

export default function SignInPage() {
  return (
    <main className="auth-card">
      <Suspense>
        <SignInForm />
      </Suspense>
    </main>
  );
}
