/** The email and password fields of the sign-in and sign-up forms; `newPassword` asks for one of at least 8 characters. */
export function CredentialFields({ newPassword = false }: { newPassword?: boolean }) {
  return (
    <>
      <label>
        Email
        <input name="email" type="email" autoComplete="email" required />
      </label>
      <label>
        Password
        <input name="password" type="password" autoComplete={newPassword ? "new-password" : "current-password"} minLength={newPassword ? 8 : undefined} required />
        {newPassword ? <span className="small muted">At least 8 characters.</span> : null}
      </label>
    </>
  );
}
