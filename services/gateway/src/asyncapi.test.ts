import { readFile } from "node:fs/promises";
import { Parser } from "@asyncapi/parser";
import { streamMaxAges } from "@funil/rpc";
import { describe, expect, it } from "vitest";
import { asyncapiDocument, STREAM_MAX_AGE_SETTINGS, subjectMatches } from "./asyncapi.js";
import { gatewayConfig } from "./config.js";

const root = new URL("../../../", import.meta.url);
const doc = asyncapiDocument() as {
  channels: Record<string, { address: string }>;
  operations: Record<string, { action: string; channel: { $ref: string }; "x-consumer"?: string }>;
  "x-jetstream": { consumers: Record<string, { filter_subject: string }> };
};
const addresses = Object.values(doc.channels).map((c) => c.address);

/** The first column of the table under `heading` in a docs/ file, where it is `code`. */
async function tableColumn(file: string, heading: string): Promise<string[]> {
  const text = await readFile(new URL(file, root), "utf8");
  const section = text.slice(text.indexOf(heading));
  const start = section.slice(section.indexOf("\n|"));
  const table = start.slice(0, start.search(/\n(?!\|)/));
  return [...table.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]!);
}

describe("the AsyncAPI document (docs/api/events.md §AsyncAPI document)", () => {
  it("docs/api/events.md §AsyncAPI document: @asyncapi/parser reads it as AsyncAPI 3.0 with no error and no warning", async () => {
    const { document, diagnostics } = await new Parser().parse(JSON.stringify(doc));
    // Severities 0 and 1 are errors and warnings; 2 and 3 (information, hints) are advice, such as
    // "a newer AsyncAPI version exists", and are not failures.
    const problems = diagnostics
      .filter((d) => d.severity <= 1)
      .map((d) => `${d.code} at ${d.path.join("/")}: ${d.message}`);
    expect(problems).toEqual([]);
    expect(document?.version()).toBe("3.0.0");
    expect(document?.channels().length).toBe(Object.keys(doc.channels).length);
  });

  it("docs/api/events.md §AsyncAPI document: docs/asyncapi.json is the document as the gateway builds it (npm run generate:asyncapi)", async () => {
    const committed = await readFile(new URL("docs/asyncapi.json", root), "utf8");
    expect(committed).toBe(`${JSON.stringify(doc, null, 2)}\n`);
  });

  it("docs/api/events.md §Every event type: every type of the table has its channel events.<type>", async () => {
    const types = await tableColumn("docs/api/events.md", "## Every event type");
    expect(types.length).toBeGreaterThan(10);
    for (const type of types) expect(addresses, type).toContain(`events.${type}`);
  });

  it("docs/api/interactions.md §Ingest and docs/api/learners.md §Ingest: every subject of their tables has its channel, and so do the dead letters", async () => {
    const ingest = await tableColumn("docs/api/interactions.md", "## Ingest");
    const platform = await tableColumn("docs/api/learners.md", "## Ingest");
    expect(ingest).toHaveLength(4);
    expect(platform).toHaveLength(9);
    for (const subject of [...ingest, ...platform]) expect(addresses, subject).toContain(subject);
    expect(addresses).toContain("ingest.dead.{subject}");
    expect(addresses).toContain("platform.deadletter");
    expect(addresses).toContain("webhook.deliveries.{subscriptionId}");
  });

  it("docs/api/events.md §AsyncAPI document: each channel is sent by one operation and received by every durable consumer whose filter covers it", () => {
    for (const [id, channel] of Object.entries(doc.channels)) {
      const ops = Object.values(doc.operations).filter((o) => o.channel.$ref === `#/channels/${id}`);
      expect(
        ops.filter((o) => o.action === "send"),
        id,
      ).toHaveLength(1);
      const receivers = ops.flatMap((o) => (o.action === "receive" ? [o["x-consumer"]] : []));
      const covering = Object.entries(doc["x-jetstream"].consumers)
        .filter(([, c]) => subjectMatches(c.filter_subject, channel.address))
        .map(([durable]) => durable);
      expect(receivers.sort(), id).toEqual(covering.sort());
    }
    // The timeline's ledger and the webhooks fan-out read every event; nobody reads the ingest dead letters.
    const receiversOf = (id: string) =>
      Object.values(doc.operations)
        .filter((o) => o.action === "receive" && o.channel.$ref === `#/channels/${id}`)
        .map((o) => o["x-consumer"])
        .sort();
    expect(receiversOf("events.note.created")).toEqual(["timeline-events", "webhooks-fanout"]);
    expect(receiversOf("ingest.inbox.conversation_assigned")).toEqual(["timeline-inbox"]);
    expect(receiversOf("ingest.dead")).toEqual([]);
  });

  it("docs/operations.md §Retention: the max_age setting the document names for each stream is the one that changes that stream", () => {
    for (const [stream, setting] of Object.entries(STREAM_MAX_AGE_SETTINGS)) {
      const ages = streamMaxAges(gatewayConfig.parse({ [setting]: "4242" }));
      for (const [other, age] of Object.entries(ages))
        expect(age === 4242, `${setting} → ${other}`).toBe(other === stream);
    }
  });
});
