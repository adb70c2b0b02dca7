import { processSingleton } from "../kernel/singleton";

// The loops of this process report here as they go round; readiness (GET /readyz) reads it.
// So health knows which loops run without importing them (the engine sits above observability).

export interface Heartbeat {
  running: boolean;
  /** When the loop last went round (ms since the epoch; 0 before its first round). */
  beatAt: number;
}

const beats = processSingleton("heartbeats", () => new Map<string, Heartbeat>());

/** The loop `name` started or stopped. */
export function setRunning(name: string, running: boolean): void {
  const beat = beats.get(name);
  if (beat) beat.running = running;
  else beats.set(name, { running, beatAt: 0 });
}

/** The loop `name` went round. */
export function beat(name: string): void {
  const heartbeat = beats.get(name);
  if (heartbeat) heartbeat.beatAt = Date.now();
  else beats.set(name, { running: true, beatAt: Date.now() });
}

/** What loop `name` last reported (not running, never beat, when it never started). */
export function heartbeat(name: string): Heartbeat {
  return { ...(beats.get(name) ?? { running: false, beatAt: 0 }) };
}
