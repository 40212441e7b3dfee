// A webhook receiver for Portico's tests: checks each delivery with the Standard Webhooks
// reference library (npm `standardwebhooks`) and appends what it saw to a file, one JSON line
// per request: {id, attempt, verified, status, event}. It refuses (503) the first REFUSE
// requests, answers the rest 204 when the signature checks out and 400 when it does not.
// MODE "hang" never answers; "huge" answers every request 500 with 10 MB of text.
//
// Usage: node receiver.mjs SECRET REFUSE OUTPUT_FILE [MODE]; prints "listening PORT" once
// ready.
import { createServer } from "node:http";
import { appendFileSync } from "node:fs";
import standardwebhooks from "standardwebhooks";

const [secret, refuseText, output, mode] = process.argv.slice(2);
const webhook = new standardwebhooks.Webhook(secret);
let refuse = Number(refuseText);
const attempts = new Map();

const server = createServer((request, response) => {
  const chunks = [];
  request.on("data", (c) => chunks.push(c));
  request.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    const id = request.headers["webhook-id"];
    const attempt = (attempts.get(id) ?? 0) + 1;
    attempts.set(id, attempt);
    let status;
    let event = null;
    let verified = false;
    if (mode === "hang" || mode === "huge") {
      appendFileSync(output, JSON.stringify({ id, attempt, mode }) + "\n");
      if (mode === "huge") {
        response.writeHead(500, { "content-type": "text/plain" });
        response.end("x".repeat(10 * 1024 * 1024));
      }
      return;
    }
    if (refuse > 0) {
      refuse -= 1;
      status = 503;
    } else {
      try {
        event = webhook.verify(body, request.headers);
        verified = true;
        status = 204;
      } catch (e) {
        event = { error: String(e && e.message) };
        status = 400;
      }
    }
    appendFileSync(output, JSON.stringify({ id, attempt, verified, status, event }) + "\n");
    response.writeHead(status, { "content-type": "text/plain" });
    response.end(status === 503 ? "busy, try later" : "");
  });
});
server.listen(0, "127.0.0.1", () => {
  console.log(`listening ${server.address().port}`);
});
