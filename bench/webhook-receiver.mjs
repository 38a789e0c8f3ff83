// The bench's receiver, in its own process so that it does not share the bench's event loop: every POST
// to /fast/<n> answers 200 at once, /hang/<n> never answers (the sender's timeout ends it); GET /stats
// gives the count of answered POSTs per path, and `hanging`, the requests held open right now.
import http from "node:http";

const counts = {};
let hanging = 0;
const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/stats") {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ counts, hanging }));
    return;
  }
  req.resume();
  req.on("end", () => {
    if (req.url.startsWith("/hang/")) {
      hanging++;
      res.once("close", () => hanging--);
      return;
    }
    counts[req.url] = (counts[req.url] ?? 0) + 1;
    res.writeHead(200).end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => process.stdout.write(`${server.address().port}\n`));
