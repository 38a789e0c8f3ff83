import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";

/**
 * Headless Chromium (Debian's `chromium` package) driven over the DevTools
 * protocol on `--remote-debugging-pipe`: JSON messages, each ended by a NUL
 * byte, on the browser's file descriptors 3 (in) and 4 (out). No driver
 * library and no WebSocket: the protocol's own pipe is all a test needs.
 */

// biome-ignore lint/suspicious/noExplicitAny: DevTools protocol answers and events are plain JSON
type Json = any;

/** Where the browser is: CHROMIUM, else Debian's. */
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

export interface BrowserEvent {
  method: string;
  params: Json;
}

export interface Page {
  send(method: string, params?: Json): Promise<Json>;
  /** Every event of this page so far (network requests, console calls, exceptions). */
  events: BrowserEvent[];
  /** Opens `url` and waits for its load event. */
  goto(url: string): Promise<void>;
  /** The value of an expression evaluated in the page, awaited when it is a promise. */
  evaluate<T = Json>(expression: string): Promise<T>;
  /** What the page printed and threw, for failure messages. */
  console(): string[];
}

export interface Browser {
  page(): Promise<Page>;
  close(): Promise<void>;
}

/**
 * Flags for a machine with no way out: no background traffic (updates,
 * sync, field trials), and the sandbox off only for root, which Chromium
 * refuses to run under it.
 */
const BASE_FLAGS = [
  "--headless",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--no-default-browser-check",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-extensions",
  "--remote-debugging-pipe",
];

/** A fresh profile and browser; `flags` add to the base ones (host resolver rules, window size). */
export async function launchChromium(flags: string[] = []): Promise<Browser> {
  const profile = await mkdtemp(join(tmpdir(), "funil-chromium-"));
  const sandbox = process.getuid?.() === 0 ? ["--no-sandbox"] : [];
  const child = spawn(CHROMIUM, [...BASE_FLAGS, ...sandbox, `--user-data-dir=${profile}`, ...flags], {
    stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"],
  });
  const stderr: string[] = [];
  child.stderr!.on("data", (d) => stderr.push(String(d)));
  const connection = new Connection(child, () => stderr.join("").slice(-2000));
  try {
    await connection.started();
  } catch (err) {
    child.kill("SIGKILL");
    await rm(profile, { recursive: true, force: true });
    throw err;
  }
  return {
    page: () => openPage(connection),
    async close() {
      await connection.send("Browser.close").catch(() => {});
      await connection.exited(5_000);
      await rm(profile, { recursive: true, force: true });
    },
  };
}

class Connection {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(v: Json): void; reject(e: Error): void }>();
  private readonly listeners = new Set<(sessionId: string | undefined, event: BrowserEvent) => void>();
  private readonly exit: Promise<void>;
  private failure: Error | undefined;

  constructor(
    private readonly child: ChildProcess,
    private readonly stderr: () => string,
  ) {
    const input = child.stdio[3] as Writable;
    const output = child.stdio[4] as Readable;
    input.on("error", () => {});
    let buffered = "";
    output.setEncoding("utf8");
    output.on("data", (chunk: string) => {
      buffered += chunk;
      for (let end = buffered.indexOf("\0"); end >= 0; end = buffered.indexOf("\0")) {
        this.dispatch(JSON.parse(buffered.slice(0, end)));
        buffered = buffered.slice(end + 1);
      }
    });
    this.exit = new Promise((resolve) => {
      const fail = (why: string) => {
        this.failure = new Error(`${why}\n${this.stderr()}`);
        for (const p of this.pending.values()) p.reject(this.failure);
        this.pending.clear();
        resolve();
      };
      child.on("error", (err: NodeJS.ErrnoException) =>
        fail(
          err.code === "ENOENT"
            ? `Chromium is not installed at ${CHROMIUM}: apt-get install -y chromium (docs/testing.md), or set CHROMIUM`
            : `Chromium did not start: ${err.message}`,
        ),
      );
      child.on("exit", (code, signal) => fail(`Chromium exited (code ${code}, signal ${signal})`));
    });
  }

  /** Resolves once the browser answers on the pipe. */
  async started() {
    await this.send("Browser.getVersion");
  }

  private dispatch(message: Json) {
    if (message.id !== undefined) {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error) waiter?.reject(new Error(`${message.error.message} (${message.error.code})`));
      else waiter?.resolve(message.result);
      return;
    }
    for (const listener of this.listeners)
      listener(message.sessionId, { method: message.method, params: message.params });
  }

  send(method: string, params: Json = {}, sessionId?: string): Promise<Json> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      (this.child.stdio[3] as Writable).write(`${JSON.stringify({ id, method, params, sessionId })}\0`);
    });
  }

  listen(fn: (sessionId: string | undefined, event: BrowserEvent) => void) {
    this.listeners.add(fn);
  }

  async exited(timeoutMs: number) {
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    await this.exit;
    clearTimeout(timer);
  }
}

async function openPage(connection: Connection): Promise<Page> {
  const { targetId } = await connection.send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await connection.send("Target.attachToTarget", { targetId, flatten: true });
  const events: BrowserEvent[] = [];
  const waiters = new Set<(event: BrowserEvent) => void>();
  connection.listen((from, event) => {
    if (from !== sessionId) return;
    events.push(event);
    for (const waiter of waiters) waiter(event);
  });
  const send = (method: string, params?: Json) => connection.send(method, params, sessionId);
  await Promise.all([send("Page.enable"), send("Network.enable"), send("Runtime.enable")]);
  const page: Page = {
    send,
    events,
    async goto(url) {
      const loaded = new Promise<void>((resolve) => {
        const waiter = (event: BrowserEvent) => {
          if (event.method !== "Page.loadEventFired") return;
          waiters.delete(waiter);
          resolve();
        };
        waiters.add(waiter);
      });
      const { errorText } = await send("Page.navigate", { url });
      if (errorText) throw new Error(`${url}: ${errorText}`);
      await loaded;
    },
    async evaluate(expression) {
      const { result, exceptionDetails } = await send("Runtime.evaluate", {
        expression,
        awaitPromise: true,
        returnByValue: true,
      });
      if (exceptionDetails)
        throw new Error(
          `in the page: ${exceptionDetails.exception?.description ?? exceptionDetails.text}\n${page.console().join("\n")}`,
        );
      return result.value;
    },
    console: () =>
      events.flatMap((e) => {
        if (e.method === "Runtime.consoleAPICalled")
          return [
            `console.${e.params.type}: ${e.params.args.map((a: Json) => a.value ?? a.description).join(" ")}`,
          ];
        if (e.method === "Runtime.exceptionThrown")
          return [
            `uncaught: ${e.params.exceptionDetails.exception?.description ?? e.params.exceptionDetails.text}`,
          ];
        if (e.method === "Network.loadingFailed")
          return [
            `request failed: ${e.params.errorText} ${e.params.blockedReason ?? e.params.corsErrorStatus?.corsError ?? ""}`,
          ];
        return [];
      }),
  };
  return page;
}
