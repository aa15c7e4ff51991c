// A program that is a conclave node: it takes the flags of `conclave node`
// (or --config FILE, as `conclave cluster up --program` writes it) and, while
// it leads, logs "leading in term E/L" every second; it logs "stopped leading"
// the moment it stops. It also serves the agent kind "greet": a job step
// greet:NAME logs "hello, NAME", once per step however often the step runs;
// each leader submits one such job when it starts leading.
// See docs/concepts/nodes.md, "Embed a node in your program", and
// docs/concepts/workflows.md, "Workflows across nodes".
//
//   conclave cluster up --nodes 3 --dir /tmp/e --program ./build/bin/embedded_node
//   conclave job submit --dir /tmp/e --wait greet:world
#include <conclave/node.hpp>

#include <chrono>
#include <mutex>
#include <set>
#include <string>

int main(int argc, char** argv) {
  conclave::embedded_node node{argc, argv};
  node.on_leading([&node](const conclave::leadership& lead) {
    // Stamp the term on everything the leader does: it fences older leaders.
    auto term = lead.term().to_string();
    // Work for the cluster: one job per leadership, run by some node's agent.
    conclave::job_request job;
    job.steps.push_back({"greet", "from the leader of term " + term});
    if (auto id = node.submit(job))
      node.log("submitted job " + id.value);
    else
      node.log("could not submit a job: " + id.error);
    if (auto done = node.jobs("processed"))
      node.log("jobs processed so far: " + std::to_string(done.value.size()));
    do
      node.log("leading in term " + term);
    while (lead.wait_for(std::chrono::seconds(1)));
    node.log("stopped leading in term " + term);
  });
  // A step may run again (a retry, or a recovery after a node died): the
  // idempotency key tells repeats apart. This memory is the process's own; a
  // real service keeps the keys it has handled where its effects are.
  std::mutex mu;
  std::set<std::string> greeted;
  node.on_agent("greet", [&](const conclave::step_call& call) {
    if (call.payload.empty())
      return conclave::step_result::permanent_failure("no_name", "greet:NAME");
    {
      std::lock_guard<std::mutex> lock{mu};
      if (!greeted.insert(call.idempotency_key).second)
        return conclave::step_result::success("greeted before");
    }
    node.log("hello, " + call.payload + " (step " + call.idempotency_key + ")");
    return conclave::step_result::success();
  });
  return node.run(); // until SIGTERM or SIGINT; 2 on bad flags
}
