#include "tools/vmbench/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "vm/error.h"

namespace dynvm::vmbench {
namespace {

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string short_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

struct Series {
  const char* name;
  const char* color;
  EngineResult SizeResult::*engine;
};
// Drawn in this order: the dynamic line last, on top of the static one it tracks.
constexpr Series kSeries[] = {{"static", "#ff7f0e", &SizeResult::stat},
                              {"ONNX Runtime", "#2ca02c", &SizeResult::ort},
                              {"dynamic", "#1f77b4", &SizeResult::dynamic}};
const char* const kDashes[] = {"", "7 4", "2 3", "10 3 2 3"};

constexpr double kWidth = 960, kLeft = 80, kPlotRight = 700, kTop = 50, kBottom = 330;

}  // namespace

std::string svg_plot(const BenchReport& r) {
  // The latency panel's scale.
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const ThreadRun& run : r.runs) {
    for (const SizeResult& z : run.sizes) {
      for (const Series& s : kSeries) {
        const EngineResult& e = z.*(s.engine);
        if (!e.measured || e.latency.median_ms <= 0) continue;
        lo = std::min(lo, e.latency.median_ms);
        hi = std::max(hi, e.latency.median_ms);
      }
    }
  }
  const bool any = hi > 0;
  const bool log_scale = any && hi / lo > 20;
  double y_lo = 0, y_hi = any ? hi * 1.1 : 1;
  if (log_scale) {
    y_lo = std::floor(std::log10(lo));
    y_hi = std::ceil(std::log10(hi));
  }
  auto y_of = [&](double ms) {
    const double v = log_scale ? std::log10(ms) : ms;
    return kBottom - (v - y_lo) / (y_hi - y_lo) * (kBottom - kTop);
  };
  const size_t n = std::max<size_t>(r.sizes.size(), 1);
  const double step = (kPlotRight - kLeft) / static_cast<double>(n);
  auto x_of = [&](size_t i) { return kLeft + (static_cast<double>(i) + 0.5) * step; };

  const size_t bars = 2 + r.statics.size();
  const double bars_top = 470, bar_h = 18, bar_gap = 6;
  const double height = bars_top + static_cast<double>(bars) * (bar_h + bar_gap) + 30;

  std::string s = str_cat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"",
      num(kWidth), "\" height=\"", num(height), "\" viewBox=\"0 0 ", num(kWidth), " ", num(height),
      "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n",
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  s += str_cat("<text x=\"", num(kLeft), "\" y=\"28\" font-size=\"15\" font-weight=\"bold\">",
               esc(r.model), ": latency by input size (median ms", log_scale ? ", log scale" : "",
               ")</text>\n");
  // Axes and grid.
  s += str_cat("<line x1=\"", num(kLeft), "\" y1=\"", num(kBottom), "\" x2=\"", num(kPlotRight),
               "\" y2=\"", num(kBottom), "\" stroke=\"black\"/>\n<line x1=\"", num(kLeft),
               "\" y1=\"", num(kTop), "\" x2=\"", num(kLeft), "\" y2=\"", num(kBottom),
               "\" stroke=\"black\"/>\n");
  std::vector<double> ticks;
  if (log_scale) {
    for (double k = y_lo; k <= y_hi + 1e-9; k += 1) ticks.push_back(std::pow(10.0, k));
  } else {
    for (int k = 0; k <= 4; ++k) ticks.push_back(y_hi * k / 4);
  }
  for (double t : ticks) {
    const double y = log_scale ? y_of(t) : kBottom - t / y_hi * (kBottom - kTop);
    s += str_cat("<line x1=\"", num(kLeft), "\" y1=\"", num(y), "\" x2=\"", num(kPlotRight),
                 "\" y2=\"", num(y), "\" stroke=\"#dddddd\"/>\n<text x=\"", num(kLeft - 6),
                 "\" y=\"", num(y + 4), "\" text-anchor=\"end\">", short_value(t), "</text>\n");
  }
  for (size_t i = 0; i < r.sizes.size(); ++i) {
    s += str_cat("<text transform=\"translate(", num(x_of(i)), ",", num(kBottom + 14),
                 ") rotate(20)\" font-size=\"11\">", esc(r.sizes[i]), "</text>\n");
  }
  // One line per engine and thread count.
  double legend_y = kTop + 6;
  for (size_t t = 0; t < r.runs.size(); ++t) {
    const ThreadRun& run = r.runs[t];
    const char* dash = kDashes[t % (sizeof(kDashes) / sizeof(kDashes[0]))];
    for (const Series& series : kSeries) {
      std::string points, marks;
      bool drawn = false;
      for (size_t i = 0; i < run.sizes.size(); ++i) {
        const EngineResult& e = run.sizes[i].*(series.engine);
        if (!e.measured || e.latency.median_ms <= 0) continue;
        const double x = x_of(i), y = y_of(e.latency.median_ms);
        points += str_cat(num(x), ",", num(y), " ");
        marks += str_cat("<circle cx=\"", num(x), "\" cy=\"", num(y), "\" r=\"3.5\" fill=\"",
                         series.color, "\"><title>", series.name, ", ", run.threads, " thread",
                         run.threads == 1 ? "" : "s", ", ", esc(r.sizes[i]), ": ",
                         short_value(e.latency.median_ms), " ms</title></circle>\n");
        drawn = true;
      }
      if (!drawn) continue;
      s += str_cat("<polyline fill=\"none\" stroke=\"", series.color,
                   "\" stroke-width=\"2\" points=\"", points, "\"",
                   *dash ? str_cat(" stroke-dasharray=\"", dash, "\"") : "", "/>\n", marks);
      s += str_cat("<line x1=\"720\" y1=\"", num(legend_y), "\" x2=\"750\" y2=\"", num(legend_y),
                   "\" stroke=\"", series.color, "\" stroke-width=\"2\"",
                   *dash ? str_cat(" stroke-dasharray=\"", dash, "\"") : "",
                   "/>\n<text x=\"758\" y=\"", num(legend_y + 4), "\">", series.name, ", ",
                   run.threads, " thread", run.threads == 1 ? "" : "s", "</text>\n");
      legend_y += 18;
    }
  }
  if (!any) {
    s += str_cat("<text x=\"", num(kLeft + 20), "\" y=\"", num((kTop + kBottom) / 2),
                 "\">nothing was measured</text>\n");
  }

  // Compile times.
  s += str_cat("<text x=\"", num(kLeft), "\" y=\"", num(bars_top - 16),
               "\" font-size=\"15\" font-weight=\"bold\">compile time (s)</text>\n");
  double total = 0, longest = r.dynamic.ok ? r.dynamic.compile_s : 0;
  for (const BuildInfo& b : r.statics) {
    if (!b.ok) continue;
    total += b.compile_s;
  }
  longest = std::max(longest, total);
  const double bar_left = 330, bar_right = 880;
  auto bar = [&](size_t row, const std::string& label, const BuildInfo* b, double value,
                 const char* color) {
    const double y = bars_top + static_cast<double>(row) * (bar_h + bar_gap);
    s += str_cat("<text x=\"", num(bar_left - 8), "\" y=\"", num(y + 13), "\" text-anchor=\"end\">",
                 esc(label), "</text>\n");
    if (b != nullptr && !b->ok) {
      s += str_cat("<text x=\"", num(bar_left), "\" y=\"", num(y + 13),
                   "\" fill=\"#aa0000\">not built</text>\n");
      return;
    }
    const double w = longest > 0 ? value / longest * (bar_right - bar_left) : 0;
    s += str_cat("<rect x=\"", num(bar_left), "\" y=\"", num(y), "\" width=\"",
                 num(std::max(w, 1.0)), "\" height=\"", num(bar_h), "\" fill=\"", color,
                 "\"><title>", esc(label), ": ", short_value(value),
                 " s</title></rect>\n<text x=\"", num(bar_left + std::max(w, 1.0) + 6), "\" y=\"",
                 num(y + 13), "\">", short_value(value), "</text>\n");
  };
  bar(0, "dynamic (every size)", &r.dynamic, r.dynamic.compile_s, kSeries[2].color);
  for (size_t k = 0; k < r.statics.size(); ++k) {
    bar(k + 1, "static " + r.statics[k].label, &r.statics[k], r.statics[k].compile_s,
        kSeries[0].color);
  }
  bar(bars - 1, "static, all sizes", nullptr, total, "#c05800");
  s += "</svg>\n";
  return s;
}

}  // namespace dynvm::vmbench
