#include "tools/vmbench/report.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "vm/error.h"

namespace dynvm::vmbench {
namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string mib(size_t bytes) { return fixed(static_cast<double>(bytes) / (1 << 20), 2); }

// a / b from the printed medians, when both were measured.
std::optional<double> ratio(const EngineResult& a, const EngineResult& b) {
  if (!a.measured || !b.measured) return std::nullopt;
  const double pa = printed_ms(a.latency.median_ms), pb = printed_ms(b.latency.median_ms);
  if (pb <= 0) return std::nullopt;
  return pa / pb;
}

std::string cell(const std::optional<double>& v, int decimals) {
  return v ? fixed(*v, decimals) : "—";
}

std::string ms_cell(const EngineResult& e) {
  return e.measured ? fixed(printed_ms(e.latency.median_ms), 3) : "—";
}

std::string p90_cell(const EngineResult& e) {
  return e.measured ? fixed(printed_ms(e.latency.p90_ms), 3) : "—";
}

// The geometric mean of a/b over the sizes where both were measured; weighted by
// request counts when the sizes come from traffic.
std::optional<double> mean_ratio(const BenchReport& r, const ThreadRun& run,
                                 EngineResult SizeResult::*a, EngineResult SizeResult::*b) {
  double log_sum = 0, weight = 0;
  for (size_t i = 0; i < run.sizes.size(); ++i) {
    std::optional<double> q = ratio(run.sizes[i].*a, run.sizes[i].*b);
    if (!q || *q <= 0) continue;
    const double w = r.weighted ? r.weights[i] : 1.0;
    log_sum += w * std::log(*q);
    weight += w;
  }
  if (weight == 0) return std::nullopt;
  return std::exp(log_sum / weight);
}

struct Totals {
  size_t static_ok = 0;
  double static_s = 0;
  size_t static_bytes = 0;
  std::optional<int> break_even;  // sizes from which one dynamic build compiles faster
};

Totals totals(const BenchReport& r) {
  Totals t;
  for (const BuildInfo& b : r.statics) {
    if (!b.ok) continue;
    ++t.static_ok;
    t.static_s += b.compile_s;
    t.static_bytes += b.file_bytes;
  }
  if (r.dynamic.ok && t.static_ok > 0 && t.static_s > 0) {
    const double each = t.static_s / static_cast<double>(t.static_ok);
    t.break_even = std::max(1, static_cast<int>(std::ceil(r.dynamic.compile_s / each - 1e-9)));
  }
  return t;
}

nlohmann::json engine_json(const EngineResult& e) {
  if (!e.measured) {
    return e.error.empty() ? nlohmann::json(nullptr) : nlohmann::json{{"error", e.error}};
  }
  nlohmann::json j{{"median_ms", e.latency.median_ms},
                   {"p90_ms", e.latency.p90_ms},
                   {"min_ms", e.latency.min_ms},
                   {"max_ms", e.latency.max_ms},
                   {"runs", e.latency.runs}};
  if (e.peak_bytes > 0) j["peak_bytes"] = e.peak_bytes;
  return j;
}

nlohmann::json build_json(const BuildInfo& b) {
  nlohmann::json j{{"label", b.label}, {"ok", b.ok}};
  if (b.ok) {
    j["compile_s"] = b.compile_s;
    j["file_bytes"] = b.file_bytes;
  } else {
    j["error"] = b.error;
  }
  return j;
}

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

double printed_ms(double ms) { return std::round(ms * 1000.0) / 1000.0; }

std::string format_report(const BenchReport& r) {
  std::string s =
      str_cat("vmbench: ", r.model, ", ", r.sizes.size(), " size", r.sizes.size() == 1 ? "" : "s",
              ", ", r.rounds, " round", r.rounds == 1 ? "" : "s", " x ", r.repeat,
              " runs (each engine's best round's median, ms)\n");
  if (!r.ort_note.empty()) s += "ONNX Runtime: not measured (" + r.ort_note + ")\n";
  const bool ort = r.ort_note.empty();
  for (const ThreadRun& run : r.runs) {
    s += str_cat("\n", run.threads, " thread", run.threads == 1 ? "" : "s", "\n");
    s += "| size |";
    if (r.weighted) s += " requests |";
    s += " dynamic | dynamic p90 | static | static p90 | dynamic/static |";
    if (ort) s += " ORT | dynamic/ORT |";
    s += " peak MiB dynamic | peak MiB static |\n|---|";
    if (r.weighted) s += "---:|";
    s += "---:|---:|---:|---:|---:|";
    if (ort) s += "---:|---:|";
    s += "---:|---:|\n";
    std::string notes;
    for (size_t i = 0; i < run.sizes.size(); ++i) {
      const SizeResult& z = run.sizes[i];
      s += "| " + r.sizes[i] + " |";
      if (r.weighted) s += " " + fixed(r.weights[i], 0) + " |";
      s += " " + ms_cell(z.dynamic) + " | " + p90_cell(z.dynamic) + " | " + ms_cell(z.stat) +
           " | " + p90_cell(z.stat) + " | " + cell(ratio(z.dynamic, z.stat), 2) + " |";
      if (ort) s += " " + ms_cell(z.ort) + " | " + cell(ratio(z.dynamic, z.ort), 2) + " |";
      s += " " + (z.dynamic.measured ? mib(z.dynamic.peak_bytes) : "—") + " | " +
           (z.stat.measured ? mib(z.stat.peak_bytes) : "—") + " |\n";
      for (const auto& [name, e] : {std::pair{"dynamic", &z.dynamic}, std::pair{"static", &z.stat},
                                    std::pair{"ORT", &z.ort}}) {
        if (!e->error.empty()) notes += str_cat("  ", r.sizes[i], ": ", name, ": ", e->error, "\n");
      }
    }
    if (!notes.empty()) s += "not measured:\n" + notes;
    const char* how = r.weighted ? "weighted by requests" : "geometric mean";
    if (std::optional<double> q = mean_ratio(r, run, &SizeResult::dynamic, &SizeResult::stat)) {
      s += str_cat("dynamic/static, ", how, ": ", fixed(*q, 2), "\n");
    }
    if (ort) {
      if (std::optional<double> q = mean_ratio(r, run, &SizeResult::dynamic, &SizeResult::ort)) {
        s += str_cat("dynamic/ORT, ", how, ": ", fixed(*q, 2), "\n");
      }
    }
  }

  s += "\nbuilds\n| build | compile s | file MiB |\n|---|---:|---:|\n";
  auto build_row = [&](const std::string& label, const BuildInfo& b) {
    s += "| " + label + " | " + (b.ok ? fixed(b.compile_s, 2) : "—") + " | " +
         (b.ok ? mib(b.file_bytes) : "—") + " |\n";
  };
  build_row("dynamic (every size)", r.dynamic);
  for (const BuildInfo& b : r.statics) build_row("static " + b.label, b);
  const Totals t = totals(r);
  s += str_cat("| static, ", t.static_ok, " build", t.static_ok == 1 ? "" : "s", " | ",
               fixed(t.static_s, 2), " | ", mib(t.static_bytes), " |\n");
  std::string build_notes;
  if (!r.dynamic.ok) build_notes += "  dynamic: " + r.dynamic.error + "\n";
  for (const BuildInfo& b : r.statics) {
    if (!b.ok) build_notes += "  static " + b.label + ": " + b.error + "\n";
  }
  if (!build_notes.empty()) s += "not built:\n" + build_notes;
  if (r.dynamic.ok && t.static_ok > 0) {
    s += str_cat(
        "one dynamic build: ", fixed(r.dynamic.compile_s, 2), " s, ", mib(r.dynamic.file_bytes),
        " MiB; one static build per size: ", fixed(t.static_s, 2), " s, ", mib(t.static_bytes),
        " MiB for ", t.static_ok, " size", t.static_ok == 1 ? "" : "s");
    if (t.break_even) {
      s += str_cat("; the dynamic build compiles in less time than static builds from ",
                   *t.break_even, " size", *t.break_even == 1 ? "" : "s", " on");
    }
    s += "\n";
  }
  return s;
}

nlohmann::json report_json(const BenchReport& r) {
  nlohmann::json j;
  j["model"] = r.model;
  j["rounds"] = r.rounds;
  j["repeat"] = r.repeat;
  j["ort"] = r.ort_note.empty() ? nlohmann::json("measured") : nlohmann::json(r.ort_note);
  j["sizes"] = nlohmann::json::array();
  for (size_t i = 0; i < r.sizes.size(); ++i) {
    j["sizes"].push_back({{"label", r.sizes[i]}, {"weight", r.weights[i]}});
  }
  j["builds"]["dynamic"] = build_json(r.dynamic);
  j["builds"]["static"] = nlohmann::json::array();
  for (const BuildInfo& b : r.statics) j["builds"]["static"].push_back(build_json(b));
  const Totals t = totals(r);
  j["totals"] = {{"static_builds", t.static_ok},
                 {"static_compile_s", t.static_s},
                 {"static_file_bytes", t.static_bytes},
                 {"break_even_sizes", t.break_even ? nlohmann::json(*t.break_even) : nullptr}};
  j["runs"] = nlohmann::json::array();
  for (const ThreadRun& run : r.runs) {
    nlohmann::json jr{{"threads", run.threads}, {"sizes", nlohmann::json::array()}};
    for (size_t i = 0; i < run.sizes.size(); ++i) {
      const SizeResult& z = run.sizes[i];
      jr["sizes"].push_back({{"label", r.sizes[i]},
                             {"dynamic", engine_json(z.dynamic)},
                             {"static", engine_json(z.stat)},
                             {"ort", engine_json(z.ort)},
                             {"dynamic_over_static", optional_json(ratio(z.dynamic, z.stat))},
                             {"dynamic_over_ort", optional_json(ratio(z.dynamic, z.ort))}});
    }
    jr["mean_dynamic_over_static"] =
        optional_json(mean_ratio(r, run, &SizeResult::dynamic, &SizeResult::stat));
    jr["mean_dynamic_over_ort"] =
        optional_json(mean_ratio(r, run, &SizeResult::dynamic, &SizeResult::ort));
    j["runs"].push_back(std::move(jr));
  }
  return j;
}

}  // namespace dynvm::vmbench
