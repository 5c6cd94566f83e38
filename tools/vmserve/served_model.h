// One model behind the server: its verified Program, its executors, and the line of
// requests waiting for them. An HTTP thread hands a parsed request to infer(), which
// checks the inputs against the signature (a 400 names what is wrong). At most
// `concurrency` runs are in flight at once, each at its request's own size, so requests of
// different lengths run side by side and none is padded. A request runs on its own HTTP
// thread: at once when a slot is free and nobody waits, else after waiting its turn in a
// bounded line (a 503 when the line is full; a 504 when its deadline passes while it
// waits). Nothing is handed to another thread, so a request costs no thread switch beyond
// the wake-up of its turn.
// A run that has the machine to itself uses the TBB executor's threads for its kernels'
// parallel loops; under load each run takes one thread (the synchronous executor), which
// serves more requests per second than splitting every run across all threads
// (bench/README.md, "Serving"). "To itself" is judged over the last kLoneStarts run
// starts, not the one instant: under steady load the line empties for a moment between
// requests, and a run that then spread over every thread would take the cores the next
// requests' parsing needs.
//
// With batching on (`vmserve --batch`), requests go to a queue served by `concurrency`
// worker threads: a worker that takes a request also takes the queued requests of equal
// shapes (batching.h), waiting up to `max_queue_delay_us` from the first one's arrival
// for more, up to `max_batch` rows; their inputs are joined along the batch axis, run
// once, and the outputs split back. A batch whose outputs do not split evenly runs again
// request by request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tools/vmserve/batching.h"
#include "tools/vmserve/metrics.h"
#include "tools/vmserve/protocol.h"
#include "vm/executor.h"
#include "vm/program.h"

namespace dynvm::serve {

using Clock = std::chrono::steady_clock;

struct ModelOptions {
  int threads = 0;        // the executor's; <= 0: all hardware threads
  int concurrency = 0;    // requests run at once; <= 0: the executor's thread count
  size_t max_queue = 64;  // requests waiting for a run slot, beyond which a 503 answers
  std::chrono::milliseconds deadline{60000};  // unless a request sets parameters.timeout
  bool batching = false;
  std::map<std::string, int> batch_axes;  // overrides of batching.h's default axes
  int64_t max_batch = 8;                  // rows per batched run
  std::chrono::microseconds max_queue_delay{500};
};

// When a request arrived and when its run began.
struct RequestTiming {
  Clock::time_point arrived;
  Clock::time_point started;
  int batch = 1;  // requests in the run it was part of
};

class ServedModel {
 public:
  // Throws UserError when the model cannot be served (inputs or outputs that are not
  // tensors, or batching asked of a model without a batch axis).
  ServedModel(std::string name, std::shared_ptr<const vm::Program> program,
              const ModelOptions& options);
  ~ServedModel();
  ServedModel(const ServedModel&) = delete;
  ServedModel& operator=(const ServedModel&) = delete;

  const std::string& name() const { return name_; }
  const vm::Executable& exe() const { return program_->exe(); }
  const ModelOptions& options() const { return options_; }
  ModelMetrics& metrics() { return metrics_; }
  bool batching() const { return batch_axes_.has_value(); }

  // Runs `request` and returns the outputs it asked for. Throws HttpError.
  std::vector<NamedTensor> infer(const InferRequest& request, RequestTiming& timing);

  // Lets the workers finish what is queued, then stops them. Idempotent.
  void stop();

 private:
  struct JobResult {
    std::vector<vm::Tensor> outputs;  // signature order
    Clock::time_point started;
    int batch = 1;
  };
  struct Job {
    std::vector<vm::Tensor> inputs;  // signature order
    std::optional<std::string> batch_key;
    Clock::time_point arrived;
    Clock::time_point deadline;
    std::promise<JobResult> result;
  };

  // A request waiting for a run slot, on its own thread (release_slot hands it one).
  struct Turn {
    std::condition_variable cv;
    bool go = false;
    bool alone = false;
  };

  std::vector<vm::Tensor> bind_inputs(const InferRequest& request) const;
  // Without batching: waits for a slot in arrival order, then runs on the calling thread.
  std::vector<vm::Tensor> run_in_turn(const std::vector<vm::Tensor>& inputs,
                                      Clock::time_point deadline, RequestTiming& timing);
  // With batching: queues a job for the workers and waits for its share of a batch.
  std::vector<vm::Tensor> run_batched(std::vector<vm::Tensor> inputs, Clock::time_point deadline,
                                      RequestTiming& timing);
  void worker();
  // Takes the first job and, when batching, the queued jobs that may share its run.
  std::vector<std::unique_ptr<Job>> take_batch(std::unique_lock<std::mutex>& lock);
  void run_jobs(std::vector<std::unique_ptr<Job>> jobs, bool alone);
  // Takes a run slot (mu_ held) and counts the start: whether it had company (another run in
  // flight, a request queued or being parsed). Returns whether it may use every thread: it
  // and the kLoneStarts - 1 starts before it all had none.
  bool start_run();
  // One run; `alone`: it may use every thread (start_run).
  std::vector<vm::Tensor> run_one(const std::vector<vm::Tensor>& inputs, bool alone);
  // Gives a run slot back: to the next waiting request, or to a batching worker.
  void release_slot();

  std::string name_;
  std::shared_ptr<const vm::Program> program_;
  ModelOptions options_;
  std::optional<BatchAxes> batch_axes_;
  std::unique_ptr<vm::Executor> executor_;  // TBB: a run alone uses all its threads
  std::unique_ptr<vm::Executor> serial_;    // a run under load: the calling thread only
  int concurrency_ = 1;
  ModelMetrics metrics_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Turn*> waiting_;               // without batching
  std::deque<std::unique_ptr<Job>> queue_;  // with batching
  int running_ = 0;                         // runs in flight (<= concurrency_)
  static constexpr int kLoneStarts = 8;
  uint32_t company_ = 0;  // bit i: whether the i-th latest run start had company
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace dynvm::serve
