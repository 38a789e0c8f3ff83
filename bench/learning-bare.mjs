// The bare baseline of the learning bench: what the hardware gives for the same answers without the
// architecture (no gateway, no Connect hop, no key store). One node:http server that compares the bearer
// key's SHA-256 with the one it was given, runs the learning service's own store (the same SQL, driver
// and options) on the learning database and writes the same JSON (learning.mjs checks the bodies are
// equal before it measures). Started by bench/learning.mjs as its own process, so /proc shows its CPU:
//   BARE_DB=postgres://…/funil_x_learning BARE_KEY_SHA256=<hex> node bench/learning-bare.mjs
// It prints its port on stdout once it listens.
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { LearnerDetailSchema, LearnerSchema } from "@funil/contracts";
import { encodeCursor, toApiJson } from "@funil/rpc";
import postgres from "postgres";
import { fold } from "../services/learning/dist/messages.js";
import { learnerDetailToProto, learnerToProto } from "../services/learning/dist/rpc/wire.js";
import { learnerStore } from "../services/learning/dist/store/learners.js";
import { windowStart } from "../services/learning/dist/window.js";

const sql = postgres(process.env.BARE_DB, { max: 10, transform: postgres.camel, onnotice: () => {} });
const store = learnerStore(sql);
const keyHash = process.env.BARE_KEY_SHA256;

const send = (res, status, body) => {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(body));
};

const server = createServer(async (req, res) => {
  try {
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
    if (createHash("sha256").update(token).digest("hex") !== keyHash)
      return send(res, 401, { error: { code: "unauthorized", message: "bad key" } });
    const url = new URL(req.url, "http://bare");
    const one = /^\/api\/v1\/platform\/users\/([^/]+)$/.exec(url.pathname);
    if (one) {
      const days = Number(url.searchParams.get("days") ?? 30);
      const learner = await store.get(decodeURIComponent(one[1]), days, windowStart(new Date(), days));
      if (!learner) return send(res, 404, { error: { code: "not_found", message: "learner not found" } });
      return send(res, 200, toApiJson(LearnerDetailSchema, learnerDetailToProto(learner)));
    }
    if (url.pathname !== "/api/v1/platform/users") return send(res, 404, { error: { code: "not_found" } });
    const q = url.searchParams.get("q") ?? undefined;
    const activeSince = url.searchParams.get("activeSince") ?? undefined;
    const limit = Number(url.searchParams.get("limit") ?? 50);
    const rows = await store.list(
      {
        q: q === undefined ? undefined : fold(q),
        activeSince: activeSince ? new Date(activeSince) : undefined,
      },
      limit + 1,
    );
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    const filters = { q, activeSince, workspaceId: "platform" };
    send(res, 200, {
      data: page.map((r) => toApiJson(LearnerSchema, learnerToProto(r))),
      nextCursor:
        rows.length > limit && last
          ? encodeCursor("learners", filters, [last.createdAt.toISOString(), last.id])
          : null,
    });
  } catch (err) {
    send(res, 500, { error: { code: "internal", message: String(err) } });
  }
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
process.on("SIGTERM", () => server.close(() => sql.end().then(() => process.exit(0))));
