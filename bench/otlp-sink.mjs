// bench:tracing's OTLP/HTTP receiver, in its own process as a local collector is, so that receiving the
// exports does not share the load generator's event loop: every POST is read whole and answered 200 `{}`;
// GET /stats gives how many exports and bytes it was sent.
import http from "node:http";

const seen = { exports: 0, bytes: 0 };
const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/stats") {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(seen));
    return;
  }
  req.on("data", (c) => {
    seen.bytes += c.length;
  });
  req.on("end", () => {
    seen.exports++;
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
});
server.listen(0, "127.0.0.1", () => process.stdout.write(`${server.address().port}\n`));
