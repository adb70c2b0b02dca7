import { processSingleton } from "./singleton";

// Whether this process's PUBLIC_URL is the one the server uses. In the server it always is
// (unset, the default is what it serves at). The operator CLI runs beside the server: there a
// PUBLIC_URL nobody gave it, and no running server named (DATA_DIR/server.json), is a guess,
// and warnings about it would be about a setting the server may not have.

const state = processSingleton("public-url", () => ({ guessed: false }));

/** The operator CLI, when it was given no PUBLIC_URL and found no running server to take it from. */
export function markPublicUrlGuessed(): void {
  state.guessed = true;
}

/** Whether warnings about PUBLIC_URL apply: it is the server's own. */
export function publicUrlIsServers(): boolean {
  return !state.guessed;
}
