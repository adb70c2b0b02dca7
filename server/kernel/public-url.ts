import { processSingleton } from "./singleton";

// In the operator CLI a PUBLIC_URL nobody gave and no running server named is a guess: warnings
// about it would be about a setting the server may not have.

const state = processSingleton("public-url", () => ({ guessed: false }));

export function markPublicUrlGuessed(): void {
  state.guessed = true;
}

export function publicUrlIsServers(): boolean {
  return !state.guessed;
}
