#include "kernels/tune/records.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "vm/error.h"

namespace dynvm::tune {

using nlohmann::json;

std::string to_json_line(const TuningRecord& r) {
  json sizes = json::array();
  for (const SizeCost& s : r.sizes) {
    sizes.push_back({{"args", s.args}, {"weight", s.weight}, {"ns", s.ns}});
  }
  json j = {{"version", r.version}, {"workload", r.workload}, {"kernel", r.kernel},
            {"target", r.target},   {"knobs", r.knobs},       {"sizes", sizes},
            {"cost_ns", r.cost_ns}, {"error", r.error}};
  if (r.range) {
    j["range"] = {
        {"arg", r.range->arg}, {"axis", r.range->axis}, {"lo", r.range->lo}, {"hi", r.range->hi}};
  }
  return j.dump();
}

TuningRecord parse_record(const std::string& line) {
  TuningRecord r;
  try {
    const json j = json::parse(line);
    r.version = j.at("version").get<int>();
    if (r.version != kRecordVersion) {
      user_error("tuning record version ", r.version, " (this dynvm reads version ", kRecordVersion,
                 ")");
    }
    r.workload = j.at("workload").get<std::string>();
    r.kernel = j.value("kernel", "");
    r.target = j.at("target").get<std::string>();
    r.knobs = j.at("knobs").get<ops::KnobValues>();
    for (const json& s : j.at("sizes")) {
      r.sizes.push_back({s.at("args").get<vm::ArgShapes>(), s.at("weight").get<double>(),
                         s.at("ns").get<double>()});
    }
    r.cost_ns = j.at("cost_ns").get<double>();
    r.error = j.at("error").get<std::string>();
    if (j.contains("range")) {
      const json& g = j.at("range");
      r.range = SizeRange{g.at("arg").get<uint32_t>(), g.at("axis").get<uint32_t>(),
                          g.at("lo").get<int64_t>(), g.at("hi").get<int64_t>()};
      if (r.range->lo > r.range->hi) user_error("not a tuning record: an empty range");
    }
  } catch (const json::exception& e) {
    // nlohmann's messages are one line: "[json.exception.type_error.302] type must be ...".
    user_error("not a tuning record: ", e.what());
  }
  if (r.workload.empty()) user_error("not a tuning record: empty workload");
  return r;
}

std::vector<TuningRecord> read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<TuningRecord> records;
  if (!in) return records;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t line_no = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    const bool complete = end != std::string::npos;
    if (!complete) end = text.size();
    ++line_no;
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      records.push_back(parse_record(line));
    } catch (const UserError& e) {
      if (!complete) break;  // the write an interrupted run did not finish
      user_error(path, ":", line_no, ": ", e.what());
    }
  }
  return records;
}

void append_record(const std::string& path, const TuningRecord& r) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  if (!out) user_error("cannot write tuning records to ", path);
  out << to_json_line(r) << '\n';
  out.flush();
  if (!out) user_error("cannot write tuning records to ", path);
}

std::map<std::string, TuningRecord> best_records(const std::vector<TuningRecord>& records,
                                                 const std::string& target) {
  std::map<std::string, TuningRecord> best;
  for (const TuningRecord& r : records) {
    if (!r.ok() || r.range || (!target.empty() && r.target != target)) continue;
    auto it = best.find(r.workload);
    if (it == best.end() || r.cost_ns < it->second.cost_ns) best[r.workload] = r;
  }
  return best;
}

std::map<std::string, std::vector<TuningRecord>> range_records(
    const std::vector<TuningRecord>& records, const std::string& target) {
  std::map<std::string, std::vector<TuningRecord>> latest;
  const TuningRecord* previous = nullptr;
  for (const TuningRecord& r : records) {
    const bool mine = r.range && r.ok() && (target.empty() || r.target == target);
    if (mine) {
      const bool continues = previous != nullptr && previous->range &&
                             previous->workload == r.workload && previous->target == r.target;
      std::vector<TuningRecord>& group = latest[r.workload];
      if (!continues) group.clear();
      group.push_back(r);
    }
    previous = &r;
  }
  return latest;
}

}  // namespace dynvm::tune
