import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Sql } from "./client.js";

/** Tables every service has: the transactional outbox, the consumer inbox, idempotency keys. */
const coreMigrations: Array<[string, string]> = [
  [
    "core:00001_outbox_inbox",
    `
    create table outbox (
      seq bigserial primary key,
      id text not null unique,
      subject text not null,
      envelope jsonb not null,
      created_at timestamptz not null default now()
    );
    create table inbox (
      consumer text not null,
      message_id text not null,
      processed_at timestamptz not null default now(),
      primary key (consumer, message_id)
    );
    `,
  ],
  [
    "core:00002_idempotency",
    `
    create table idempotency_keys (
      workspace_id text not null,
      key text not null,
      fingerprint text not null,
      status text not null default 'in_flight',
      response_status int,
      response_body jsonb,
      created_at timestamptz not null default now(),
      primary key (workspace_id, key)
    );
    create index idempotency_keys_created_at on idempotency_keys (created_at);
    `,
  ],
  [
    // A key remembers the result or the failure, not an HTTP answer: {ok} or {error}.
    "core:00003_idempotency_remembered",
    `
    update idempotency_keys set response_body = jsonb_build_object('ok', response_body)
      where status = 'completed' and response_status < 300;
    alter table idempotency_keys drop column response_status;
    `,
  ],
  [
    // The W3C traceparent of the write that made the row (null when tracing is off), which the relay
    // publishes as the message's header so that the event's consumers continue the same trace.
    "core:00004_outbox_traceparent",
    "alter table outbox add column traceparent text;",
  ],
  [
    // The inbox sweep deletes by age (retention.ts): without it each sweep would read the whole table.
    "core:00005_inbox_by_age",
    "create index inbox_processed_at on inbox (processed_at);",
  ],
];

/**
 * Applies the core migrations and then the plain numbered .sql files of `dir`
 * (00001_init.sql, 00002_…), each once, each in its own transaction. An
 * advisory lock lets several copies of a service start at the same time.
 */
export async function migrate(sql: Sql, dir?: string): Promise<string[]> {
  const files = dir ? (await readdir(dir)).filter((f) => /^\d+_.*\.sql$/.test(f)).sort() : [];
  const pending: Array<[string, () => Promise<string>]> = [
    ...coreMigrations.map(([name, text]): [string, () => Promise<string>] => [name, async () => text]),
    ...files.map((f): [string, () => Promise<string>] => [f, () => readFile(join(dir!, f), "utf8")]),
  ];
  const applied: string[] = [];
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(727272)`;
    await tx`create table if not exists schema_migrations (name text primary key, applied_at timestamptz not null default now())`;
    const done = new Set((await tx`select name from schema_migrations`).map((r) => r.name as string));
    for (const [name, load] of pending) {
      if (done.has(name)) continue;
      await tx.unsafe(await load());
      await tx`insert into schema_migrations (name) values (${name})`;
      applied.push(name);
    }
  });
  return applied;
}
