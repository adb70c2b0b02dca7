import { processSingleton } from "../kernel/singleton";

// So readiness knows which loops run without importing the engine, a floor above.

export interface Heartbeat {
  running: boolean;
  beatAt: number;
}

const beats = processSingleton("heartbeats", () => new Map<string, Heartbeat>());

export function setRunning(name: string, running: boolean): void {
  const beat = beats.get(name);
  if (beat) beat.running = running;
  else beats.set(name, { running, beatAt: 0 });
}

export function beat(name: string): void {
  const heartbeat = beats.get(name);
  if (heartbeat) heartbeat.beatAt = Date.now();
  else beats.set(name, { running: true, beatAt: Date.now() });
}

export function heartbeat(name: string): Heartbeat {
  return { ...(beats.get(name) ?? { running: false, beatAt: 0 }) };
}
