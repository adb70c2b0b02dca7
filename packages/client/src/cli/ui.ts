// Terminal presentation for the `relay` command: colours and spinners only where a person is
// watching (a TTY, NO_COLOR unset), plain text everywhere else so pipes and logs stay clean.

export interface Style {
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  status(text: string): string;
}

const GOOD = new Set(["sent", "active", "yes", "succeeded", "delivered", "read"]);
const BAD = new Set(["failed", "disabled", "no", "revoked", "expired"]);
const WAITING = new Set(["pending", "claimed", "sending", "retrying", "scheduled"]);

export function style(enabled: boolean): Style {
  const paint = (open: number, close: number) => (text: string) => (enabled && text ? `\x1b[${open}m${text}\x1b[${close}m` : text);
  const s = {
    bold: paint(1, 22),
    dim: paint(2, 22),
    red: paint(31, 39),
    green: paint(32, 39),
    yellow: paint(33, 39),
    cyan: paint(36, 39),
  };
  return { ...s, status: (text) => (GOOD.has(text) ? s.green(text) : BAD.has(text) ? s.red(text) : WAITING.has(text) ? s.yellow(text) : text) };
}

/** Whether to colour: FORCE_COLOR wins, then NO_COLOR (any value), then whether it is a TTY. */
export function colorWanted(env: Record<string, string | undefined>, isTty: boolean | undefined): boolean {
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "0") return true;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  return isTty === true && env.TERM !== "dumb";
}

export interface Spinner {
  update(text: string): void;
  stop(): void;
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** Not interactive, it writes each change of the text on its own line, so logs still show progress. */
export function spinner(write: (text: string) => void, interactive: boolean, text: string): Spinner {
  let current = text;
  if (!interactive) {
    write(`${current}\n`);
    return {
      update(next) {
        if (next !== current) write(`${(current = next)}\n`);
      },
      stop() {},
    };
  }
  let frame = 0;
  const draw = () => write(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${current}`);
  draw();
  const timer = setInterval(draw, 80);
  timer.unref?.();
  return {
    update(next) {
      current = next;
      draw();
    },
    stop() {
      clearInterval(timer);
      write("\r\x1b[2K");
    },
  };
}
