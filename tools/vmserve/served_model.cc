#include "tools/vmserve/served_model.h"

#include <algorithm>
#include <new>

#include "vm/error.h"

namespace dynvm::serve {
namespace {

std::string names_of(const std::vector<vm::TensorSpec>& specs) {
  std::string s;
  for (const vm::TensorSpec& spec : specs) s += (s.empty() ? "" : ", ") + spec.name;
  return s;
}

// The answer for an exception a run threw.
HttpError run_error(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const HttpError& error) {
    return error;
  } catch (const UserError& error) {
    return HttpError(400, error.what());
  } catch (const std::bad_alloc&) {
    return HttpError(503, "out of memory");
  } catch (const std::exception& error) {
    return HttpError(500, error.what());
  } catch (...) {
    return HttpError(500, "unknown error");
  }
}

}  // namespace

ServedModel::ServedModel(std::string name, std::shared_ptr<const vm::Program> program,
                         const ModelOptions& options)
    : name_(std::move(name)), program_(std::move(program)), options_(options) {
  for (const auto* list : {&exe().inputs, &exe().outputs}) {
    for (const vm::TensorSpec& spec : *list) {
      if (spec.form != vm::ValueForm::kTensor) {
        user_error("model '", name_, "': '", spec.name, "' is a ", vm::value_form_name(spec.form),
                   "; vmserve serves models whose inputs and outputs are tensors");
      }
      if (!datatype_name(spec.dtype)) {
        user_error("model '", name_, "': '", spec.name, "' is ", vm::dtype_name(spec.dtype),
                   ", which the inference protocol has no datatype for");
      }
    }
  }
  if (options_.batching) {
    try {
      batch_axes_ = batch_axes(exe(), options_.batch_axes);
    } catch (const UserError& e) {
      user_error("cannot batch model '", name_, "': ", e.what());
    }
  }
  executor_ = std::make_unique<vm::TbbExecutor>(program_, options_.threads);
  serial_ = std::make_unique<vm::SyncExecutor>(program_);
  concurrency_ = options_.concurrency > 0 ? options_.concurrency : executor_->num_threads();
  if (batch_axes_) {
    for (int i = 0; i < concurrency_; ++i) workers_.emplace_back([this] { worker(); });
  }
}

ServedModel::~ServedModel() { stop(); }

void ServedModel::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
}

std::vector<vm::Tensor> ServedModel::bind_inputs(const InferRequest& request) const {
  const std::vector<vm::TensorSpec>& specs = exe().inputs;
  std::vector<vm::Tensor> inputs(specs.size());
  for (const NamedTensor& given : request.inputs) {
    auto it = std::find_if(specs.begin(), specs.end(),
                           [&](const vm::TensorSpec& s) { return s.name == given.name; });
    if (it == specs.end()) {
      throw HttpError(400, str_cat("model '", name_, "' has no input '", given.name,
                                   "' (inputs: ", names_of(specs), ")"));
    }
    inputs[it - specs.begin()] = given.tensor;
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw HttpError(400, str_cat("input '", specs[i].name, "' is missing (model '", name_,
                                   "' takes ", names_of(specs), ")"));
    }
  }
  // dtype, rank and dim ranges, with the runtime's own messages.
  std::vector<vm::Value> values(inputs.begin(), inputs.end());
  try {
    program_->check_inputs(values);
  } catch (const UserError& e) {
    throw HttpError(400, e.what());
  }
  return inputs;
}

std::vector<NamedTensor> ServedModel::infer(const InferRequest& request, RequestTiming& timing) {
  const std::vector<vm::TensorSpec>& outputs = exe().outputs;
  std::vector<size_t> wanted;
  for (const std::string& name : request.outputs) {
    auto it = std::find_if(outputs.begin(), outputs.end(),
                           [&](const vm::TensorSpec& s) { return s.name == name; });
    if (it == outputs.end()) {
      throw HttpError(400, str_cat("model '", name_, "' has no output '", name,
                                   "' (outputs: ", names_of(outputs), ")"));
    }
    wanted.push_back(static_cast<size_t>(it - outputs.begin()));
  }
  if (request.outputs.empty()) {
    for (size_t i = 0; i < outputs.size(); ++i) wanted.push_back(i);
  }

  std::vector<vm::Tensor> inputs = bind_inputs(request);
  // A request's own timeout is capped at a day, so that no value overflows the clock.
  constexpr int64_t kMaxTimeoutUs = int64_t{86400} * 1000 * 1000;
  const Clock::time_point deadline =
      timing.arrived +
      (request.timeout_us ? std::chrono::microseconds(std::min(*request.timeout_us, kMaxTimeoutUs))
                          : std::chrono::microseconds(options_.deadline));
  std::vector<vm::Tensor> results = batch_axes_ ? run_batched(std::move(inputs), deadline, timing)
                                                : run_in_turn(inputs, deadline, timing);
  std::vector<NamedTensor> named;
  for (size_t i : wanted) named.push_back({outputs[i].name, results[i]});  // may repeat
  return named;
}

std::vector<vm::Tensor> ServedModel::run_in_turn(const std::vector<vm::Tensor>& inputs,
                                                 Clock::time_point deadline,
                                                 RequestTiming& timing) {
  Turn turn;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_) throw HttpError(503, "the server is shutting down");
    if (waiting_.empty() && running_ < concurrency_) {
      turn.go = true;
      turn.alone = start_run();
    } else {
      if (waiting_.size() >= options_.max_queue) {
        throw HttpError(503, str_cat("model '", name_, "' has ", waiting_.size(),
                                     " requests queued, its limit (--max-queue); retry later"));
      }
      waiting_.push_back(&turn);
      if (!turn.cv.wait_until(lock, deadline, [&] { return turn.go; })) {
        waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &turn));
        const auto waited =
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - timing.arrived);
        throw HttpError(504, str_cat("deadline exceeded: the request waited ", waited.count(),
                                     " ms in the queue of model '", name_, "'"));
      }
    }
  }
  timing.started = Clock::now();
  std::vector<vm::Tensor> results;
  try {
    results = run_one(inputs, turn.alone);
  } catch (...) {
    release_slot();
    throw run_error(std::current_exception());
  }
  release_slot();
  metrics_.batch_size.observe(1);
  return results;
}

std::vector<vm::Tensor> ServedModel::run_batched(std::vector<vm::Tensor> inputs,
                                                 Clock::time_point deadline,
                                                 RequestTiming& timing) {
  auto job = std::make_unique<Job>();
  job->batch_key = batch_key(*batch_axes_, inputs);
  job->inputs = std::move(inputs);
  job->arrived = timing.arrived;
  job->deadline = deadline;
  std::future<JobResult> future = job->result.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) throw HttpError(503, "the server is shutting down");
    if (queue_.size() >= options_.max_queue) {
      throw HttpError(503, str_cat("model '", name_, "' has ", queue_.size(),
                                   " requests queued, its limit (--max-queue); retry later"));
    }
    queue_.push_back(std::move(job));
  }
  cv_.notify_all();  // every idle worker may be a batch waiting for this request's shape
  JobResult result = future.get();  // rethrows the run's HttpError
  timing.started = result.started;
  timing.batch = result.batch;
  return std::move(result.outputs);
}

bool ServedModel::start_run() {
  ++running_;
  const bool company = running_ > 1 || !waiting_.empty() || !queue_.empty() ||
                       metrics_.in_flight.load(std::memory_order_relaxed) > running_;
  company_ = (company_ << 1) | (company ? 1u : 0u);
  return (company_ & ((1u << kLoneStarts) - 1)) == 0;
}

void ServedModel::release_slot() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
    // The next requests in line run on their own threads, in arrival order.
    while (!waiting_.empty() && running_ < concurrency_) {
      Turn* next = waiting_.front();
      waiting_.pop_front();
      next->go = true;
      next->alone = start_run();
      next->cv.notify_one();
    }
  }
  cv_.notify_all();  // a batching worker waiting for a slot (and, stopping, the others)
}

void ServedModel::worker() {
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] {
      return (stopping_ && queue_.empty()) || (!queue_.empty() && running_ < concurrency_);
    });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    std::vector<std::unique_ptr<Job>> jobs = take_batch(lock);
    const bool alone = start_run();
    lock.unlock();
    run_jobs(std::move(jobs), alone);
    release_slot();
  }
}

std::vector<std::unique_ptr<ServedModel::Job>> ServedModel::take_batch(
    std::unique_lock<std::mutex>& lock) {
  std::vector<std::unique_ptr<Job>> jobs;
  jobs.push_back(std::move(queue_.front()));
  queue_.pop_front();
  const Job& first = *jobs.front();
  if (!batch_axes_ || !first.batch_key) return jobs;
  const int64_t rows = std::max<int64_t>(1, batch_rows(*batch_axes_, first.inputs));
  const size_t max_jobs = static_cast<size_t>(std::max<int64_t>(1, options_.max_batch / rows));
  const Clock::time_point until = first.arrived + options_.max_queue_delay;
  for (;;) {
    for (auto it = queue_.begin(); it != queue_.end() && jobs.size() < max_jobs;) {
      if ((*it)->batch_key == first.batch_key) {
        jobs.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    if (jobs.size() >= max_jobs || stopping_ || Clock::now() >= until) break;
    cv_.wait_until(lock, until);
  }
  return jobs;
}

std::vector<vm::Tensor> ServedModel::run_one(const std::vector<vm::Tensor>& inputs, bool alone) {
  std::vector<vm::Value> values(inputs.begin(), inputs.end());
  std::vector<vm::Value> results = (alone ? executor_ : serial_)->run(values);
  std::vector<vm::Tensor> outputs;
  for (size_t i = 0; i < results.size(); ++i) {
    const vm::Tensor* t = results[i].if_tensor();
    if (t == nullptr) {
      throw HttpError(500, str_cat("output ", i, " is a ", results[i].summary(), ", not a tensor"));
    }
    outputs.push_back(t->device() == vm::kCpu ? *t : t->copy_to(vm::kCpu));
  }
  return outputs;
}

void ServedModel::run_jobs(std::vector<std::unique_ptr<Job>> jobs, bool alone) {
  const Clock::time_point now = Clock::now();
  std::vector<std::unique_ptr<Job>> live;
  for (std::unique_ptr<Job>& job : jobs) {
    if (now > job->deadline) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - job->arrived);
      job->result.set_exception(std::make_exception_ptr(
          HttpError(504, str_cat("deadline exceeded: the request waited ", waited.count(),
                                 " ms in the queue of model '", name_, "'"))));
    } else {
      live.push_back(std::move(job));
    }
  }
  if (live.empty()) return;
  const int batch = static_cast<int>(live.size());

  // A batch: inputs joined along their batch axes, outputs split back.
  if (batch > 1) {
    std::optional<std::vector<std::vector<vm::Tensor>>> per_job;
    try {
      std::vector<vm::Tensor> joined;
      for (size_t i = 0; i < live[0]->inputs.size(); ++i) {
        const int axis = batch_axes_->inputs[i];
        if (axis < 0) {
          joined.push_back(live[0]->inputs[i]);
          continue;
        }
        std::vector<vm::Tensor> parts;
        for (const auto& job : live) parts.push_back(job->inputs[i]);
        joined.push_back(concat_along(parts, axis));
      }
      std::vector<vm::Tensor> outputs = run_one(joined, alone);
      per_job.emplace(live.size());
      for (size_t o = 0; o < outputs.size() && per_job; ++o) {
        auto parts = split_along(outputs[o], batch_axes_->outputs[o], batch);
        if (!parts) {
          per_job.reset();
          break;
        }
        for (size_t j = 0; j < live.size(); ++j) (*per_job)[j].push_back((*parts)[j]);
      }
    } catch (...) {
      per_job.reset();  // each request runs alone below and gets its own answer
    }
    if (per_job) {
      metrics_.batch_size.observe(batch);
      for (size_t j = 0; j < live.size(); ++j) {
        live[j]->result.set_value({std::move((*per_job)[j]), now, batch});
      }
      return;
    }
  }
  for (std::unique_ptr<Job>& job : live) {
    const Clock::time_point started = Clock::now();
    try {
      std::vector<vm::Tensor> outputs = run_one(job->inputs, alone && live.size() == 1);
      metrics_.batch_size.observe(1);
      job->result.set_value({std::move(outputs), started, 1});
    } catch (...) {
      job->result.set_exception(std::make_exception_ptr(run_error(std::current_exception())));
    }
  }
}

}  // namespace dynvm::serve
