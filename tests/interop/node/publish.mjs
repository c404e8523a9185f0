// Publish control messages the way any Node process can: plain ioredis PUBLISH on the queue's
// control channel `<prefix>:<queue>:control` (prefix "bull" unless spec.prefix).
// spec: {"messages": [{...JSON object, e.g. {"action": "cancel", "jobId": "1", "reason": "x"}}],
//        "wait_subscribers": N  first wait (<= 10 s) until N clients subscribe to the channel}
// prints: {"channel": str, "receivers": [PUBLISH reply per message]}
import IORedis from 'ioredis';
import { parseArgs, runMain, sleep } from './common.mjs';

runMain(async () => {
  const { queueName, spec, connection } = parseArgs();
  const redis = new IORedis(connection);
  const channel = `${spec.prefix ?? 'bull'}:${queueName}:control`;
  try {
    const deadline = Date.now() + 10000;
    while ((spec.wait_subscribers ?? 0) > 0) {
      const [, count] = await redis.pubsub('NUMSUB', channel);
      if (Number(count) >= spec.wait_subscribers || Date.now() > deadline) {
        break;
      }
      await sleep(20);
    }
    const receivers = [];
    for (const message of spec.messages ?? []) {
      receivers.push(await redis.publish(channel, JSON.stringify(message)));
    }
    return { channel, receivers };
  } finally {
    redis.disconnect();
  }
});
