import { expect } from "vitest";

/** The error `fn` throws, checked to be a `type`; fails the test when it throws nothing. */
export function thrown<E extends Error>(fn: () => unknown, type: abstract new (...args: never[]) => E): E {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(type);
    return err as E;
  }
  throw new Error(`expected a ${type.name}`);
}
