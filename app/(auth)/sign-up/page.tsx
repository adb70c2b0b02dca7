"use client";
import { useMutation } from "@tanstack/react-query";
import { signIn } from "next-auth/react";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { type FormEvent, useState } from "react";
import { ErrorText } from "@/components/widgets";
import { useTRPC } from "@/lib/trpc";
import { CredentialFields } from "../credential-fields";

export default function SignUpPage() {
  const trpc = useTRPC();
  const router = useRouter();
  const signUp = useMutation(trpc.account.signUp.mutationOptions());
  const [signInError, setSignInError] = useState<string | null>(null);

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const email = String(form.get("email"));
    const password = String(form.get("password"));
    await signUp.mutateAsync({ email, password, name: String(form.get("name") || "") || undefined });
    const res = await signIn("credentials", { email, password, redirect: false });
    if (res?.ok) router.push("/dashboard");
    else setSignInError("Your account was created, but signing in failed. Try signing in.");
  }

  return (
    <main className="auth-card">
      <form className="panel stack" onSubmit={(e) => void submit(e).catch(() => undefined)}>
        <h1>Create your Relay account</h1>
        <label>
          Name (optional)
          <input name="name" autoComplete="name" maxLength={100} />
        </label>
        <CredentialFields newPassword />
        <ErrorText error={signUp.error} />
        {signInError ? <p className="error">{signInError}</p> : null}
        <button className="primary" type="submit" disabled={signUp.isPending}>
          {signUp.isPending ? "Creating…" : "Sign up"}
        </button>
        <p className="small muted">
          Already have an account? <Link href="/sign-in">Sign in</Link>
        </p>
      </form>
    </main>
  );
}
