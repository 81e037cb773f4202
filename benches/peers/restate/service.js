// The Restate peer of benches/concurrency.rs: service `steps`, handler `run`, ten `ctx.run`
// steps. Each step's result is journaled by the Restate server before the next one starts, as
// each Task state's result is committed to statelog's log.
//
// Plain JavaScript (CommonJS), so there is no compile step. Listens on 127.0.0.1 at
// $SERVICE_PORT (default 9080).
"use strict";

// The SDK calls `Promise.withResolvers` (Node 22); this machine's Node 20 lacks it.
if (typeof Promise.withResolvers !== "function") {
  Promise.withResolvers = function withResolvers() {
    let resolve;
    let reject;
    const promise = new this((yes, no) => {
      resolve = yes;
      reject = no;
    });
    return { promise, resolve, reject };
  };
}

const http2 = require("node:http2");
const restate = require("@restatedev/restate-sdk");

const STEPS_COUNT = 10;

const steps = restate.service({
  name: "steps",
  handlers: {
    run: async (ctx, input) => {
      let value = input && typeof input.n === "number" ? input.n : 0;
      for (let index = 0; index < STEPS_COUNT; index++) {
        value = await ctx.run(`step${index}`, () => value + 1);
      }
      return { n: value };
    },
  },
});

const port = Number(process.env.SERVICE_PORT || 9080);
const handler = restate.createEndpointHandler({ services: [steps] });
const server = http2.createServer(handler);
server.listen(port, "127.0.0.1", () => {
  console.log(`steps service listening on 127.0.0.1:${port}`);
});
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => process.exit(0));
}
