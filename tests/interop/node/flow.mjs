// Flows with the real Node FlowProducer / Job API.
// spec: {"actions": [action, ...]}, each one of
//   {"add": FlowJob}                      FlowProducer.add → {"tree": {id, queueName, children}}
//   {"getFlow": {"queueName", "id"}}      FlowProducer.getFlow → {"flow": node tree}
//   {"dependencies": {"queueName", "id"}} Job.getDependencies / getDependenciesCount /
//                                          getChildrenValues → {"deps", "counts", "values"}
// prints: {"results": [result, ...]}
import { FlowProducer, Queue } from 'bullmq';
import { parseArgs, runMain } from './common.mjs';

function ids(node) {
  return {
    id: node.job.id,
    queueName: node.job.queueName,
    children: (node.children ?? []).map(ids),
  };
}

async function describe(node) {
  return {
    id: node.job.id,
    name: node.job.name,
    queueName: node.job.queueName,
    state: await node.job.getState(),
    returnvalue: node.job.returnvalue ?? null,
    failedReason: node.job.failedReason ?? null,
    parentKey: node.job.parentKey ?? null,
    children: await Promise.all((node.children ?? []).map(describe)),
  };
}

runMain(async () => {
  const { spec, connection } = parseArgs();
  const flow = new FlowProducer({ connection });
  const queues = [];
  try {
    const results = [];
    for (const action of spec.actions ?? []) {
      if (action.add) {
        results.push({ tree: ids(await flow.add(action.add)) });
      } else if (action.getFlow) {
        const node = await flow.getFlow({ ...action.getFlow, depth: 10, maxChildren: 100 });
        results.push({ flow: node ? await describe(node) : null });
      } else if (action.dependencies) {
        const queue = new Queue(action.dependencies.queueName, { connection });
        queues.push(queue);
        const job = await queue.getJob(action.dependencies.id);
        results.push({
          deps: await job.getDependencies(),
          counts: await job.getDependenciesCount(),
          values: await job.getChildrenValues(),
        });
      }
    }
    return { results };
  } finally {
    await flow.close();
    for (const q of queues) {
      await q.close();
    }
  }
});
