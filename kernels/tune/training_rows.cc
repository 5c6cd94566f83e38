#include "kernels/tune/training_rows.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "kernels/tune/features.h"
#include "vm/error.h"

namespace dynvm::tune {

void append_training_row(const std::string& path, const std::string& task, double score,
                         const std::vector<float>& features) {
  std::string line = task + '\t' + std::to_string(score) + '\t';
  char number[32];
  for (size_t i = 0; i < features.size(); ++i) {
    std::snprintf(number, sizeof number, "%s%.7g", i ? "," : "", static_cast<double>(features[i]));
    line += number;
  }
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << line << '\n';
  if (!out) user_error("cannot write training rows to ", path);
}

TrainingRows read_training_rows(const std::vector<std::string>& paths) {
  TrainingRows rows;
  std::map<std::string, int64_t> tasks;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) user_error("cannot open ", path);
    std::string line;
    for (size_t number = 1; std::getline(in, line); ++number) {
      auto bad = [&](const char* why) {
        user_error(path, ":", number, ": not a training row (", why, ")");
      };
      const size_t tab1 = line.find('\t');
      const size_t tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
      if (tab2 == std::string::npos) bad("expected task, score and features, tab separated");
      std::vector<float> f;
      const char* p = line.c_str() + tab2 + 1;
      while (*p != '\0') {
        char* end = nullptr;
        const float v = std::strtof(p, &end);
        if (end == p || !std::isfinite(v)) bad("a feature is not a finite number");
        f.push_back(v);
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0') bad("features are separated by commas");
      }
      if (f.size() != kNumFeatures) {
        user_error(path, ":", number, ": ", f.size(), " features where this dynvm computes ",
                   kNumFeatures, " (rows from another version: make them again)");
      }
      char* end = nullptr;
      const double score = std::strtod(line.c_str() + tab1 + 1, &end);
      if (end != line.c_str() + tab2 || !std::isfinite(score) || score < 0) {
        bad("the score is not a number >= 0");
      }
      const auto [it, fresh] = tasks.emplace(line.substr(0, tab1), tasks.size());
      rows.features.push_back(std::move(f));
      rows.score.push_back(score);
      rows.group.push_back(it->second);
    }
  }
  rows.tasks = tasks.size();
  return rows;
}

}  // namespace dynvm::tune
