#include "vm/profile.h"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>

namespace dynvm::vm {
namespace {

constexpr const char* kOutsideKernels = "outside kernels";

double percent_of(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

double ms_of(int64_t ns) { return static_cast<double>(ns) / 1e6; }

}  // namespace

int64_t Profile::kernel_ns() const {
  int64_t sum = 0;
  for (const KernelTime& k : kernels) sum += k.total_ns;
  return sum;
}

void Profile::merge(const Profile& other) {
  if (kernels.size() < other.kernels.size()) kernels.resize(other.kernels.size());
  for (size_t i = 0; i < other.kernels.size(); ++i) {
    kernels[i].add(other.kernels[i]);
    for (const auto& [shapes, t] : other.kernels[i].by_shape) kernels[i].by_shape[shapes].add(t);
  }
  runs += other.runs;
  run_ns += other.run_ns;
}

void Profile::report(std::ostream& os, const Executable& exe) const {
  auto name_of = [&](size_t k) {
    return k < exe.kernels.size() ? exe.kernels[k].name : "kernel " + std::to_string(k);
  };
  std::vector<size_t> called;
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (kernels[k].calls > 0) called.push_back(k);
  }
  // Longest first; ties in kernel-table order, so the table is stable across runs.
  std::stable_sort(called.begin(), called.end(),
                   [&](size_t a, size_t b) { return kernels[a].total_ns > kernels[b].total_ns; });
  size_t width = std::string_view(kOutsideKernels).size();
  for (size_t k : called) width = std::max(width, name_of(k).size());
  // Names go through the stream (they may be long); numbers through a fixed-size buffer.
  auto row = [&](const std::string& name, const char* format, auto... numbers) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), format, numbers...);
    os << name << std::string(width - name.size(), ' ') << buf << "\n";
  };

  char header[128];
  std::snprintf(header, sizeof(header), "profile over %lld run%s: %.3f ms in the VM\n",
                static_cast<long long>(runs), runs == 1 ? "" : "s", ms_of(run_ns));
  os << header;
  row("kernel", " %10s %12s %12s %9s", "calls", "total ms", "mean us", "% of run");
  for (size_t k : called) {
    const KernelTime& t = kernels[k];
    double mean_us = static_cast<double>(t.total_ns) / 1e3 / static_cast<double>(t.calls);
    row(name_of(k), " %10lld %12.3f %12.3f %9.1f", static_cast<long long>(t.calls),
        ms_of(t.total_ns), mean_us, percent_of(t.total_ns, run_ns));
  }
  int64_t outside = std::max<int64_t>(run_ns - kernel_ns(), 0);
  row(kOutsideKernels, " %10s %12.3f %12s %9.1f", "", ms_of(outside), "",
      percent_of(outside, run_ns));
}

LatencyStats latency_stats(std::vector<double> ms) {
  LatencyStats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  s.runs = n;
  s.median_ms = n % 2 == 1 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  size_t rank = (9 * n + 9) / 10;
  s.p90_ms = ms[std::max<size_t>(rank, 1) - 1];
  s.min_ms = ms.front();
  s.max_ms = ms.back();
  return s;
}

}  // namespace dynvm::vm
