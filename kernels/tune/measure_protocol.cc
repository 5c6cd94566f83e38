#include "kernels/tune/measure_protocol.h"

#include <sstream>

#include "vm/error.h"

namespace dynvm::tune {

std::string format_request(const MeasureRequest& r) {
  std::ostringstream out;
  out << "dynvm-measure 1\n"
      << "threads " << r.threads << " min_time_ms " << r.min_time_ms << " min_repeat "
      << r.min_repeat << " max_repeat " << r.max_repeat << "\n";
  out << "symbols " << r.symbols.size();
  for (const std::string& s : r.symbols) out << " " << s;
  out << "\nargs " << r.arg_dtypes.size();
  for (size_t i = 0; i < r.arg_dtypes.size(); ++i) {
    out << " " << vm::dtype_name(r.arg_dtypes[i]) << (i < r.num_inputs ? " in" : " out");
  }
  out << "\nsizes " << r.sizes.size() << "\n";
  for (const vm::ArgShapes& size : r.sizes) {
    for (const std::vector<int64_t>& shape : size) {
      out << shape.size();
      for (int64_t d : shape) out << " " << d;
      out << "  ";
    }
    out << "\n";
  }
  out << "jobs " << r.jobs.size();
  for (const auto& [symbol, size] : r.jobs) out << " " << symbol << " " << size;
  out << "\n";
  return out.str();
}

MeasureRequest parse_request(const std::string& text) {
  std::istringstream in(text);
  auto word = [&](const char* expected) {
    std::string w;
    if (!(in >> w) || w != expected) user_error("measure request: expected '", expected, "'");
  };
  auto number = [&](const char* what) {
    double v = 0;
    if (!(in >> v)) user_error("measure request: bad ", what);
    return v;
  };
  auto count = [&](const char* what) {
    const double v = number(what);
    if (v < 0 || v > 1e7 || v != static_cast<double>(static_cast<int64_t>(v))) {
      user_error("measure request: bad ", what);
    }
    return static_cast<size_t>(v);
  };
  MeasureRequest r;
  word("dynvm-measure");
  if (count("version") != 1) user_error("measure request: unknown version");
  word("threads");
  r.threads = static_cast<int>(count("threads"));
  word("min_time_ms");
  r.min_time_ms = number("min_time_ms");
  word("min_repeat");
  r.min_repeat = static_cast<int>(count("min_repeat"));
  word("max_repeat");
  r.max_repeat = static_cast<int>(count("max_repeat"));
  word("symbols");
  r.symbols.resize(count("symbol count"));
  for (std::string& s : r.symbols) {
    if (!(in >> s)) user_error("measure request: missing symbol");
  }
  word("args");
  r.arg_dtypes.resize(count("argument count"));
  bool outputs = false;
  for (vm::DType& d : r.arg_dtypes) {
    std::string name, role;
    if (!(in >> name >> role)) user_error("measure request: missing argument");
    auto parsed = vm::parse_dtype(name);
    if (!parsed) user_error("measure request: unknown dtype ", name);
    d = *parsed;
    if (role == "in") {
      if (outputs) user_error("measure request: an input after an output");
      ++r.num_inputs;
    } else if (role == "out") {
      outputs = true;
    } else {
      user_error("measure request: argument role ", role);
    }
  }
  word("sizes");
  r.sizes.resize(count("size count"));
  for (vm::ArgShapes& size : r.sizes) {
    size.resize(r.arg_dtypes.size());
    for (std::vector<int64_t>& shape : size) {
      shape.resize(count("rank"));
      for (int64_t& d : shape) d = static_cast<int64_t>(count("dim"));
    }
  }
  word("jobs");
  r.jobs.resize(count("job count"));
  for (auto& [symbol, size] : r.jobs) {
    symbol = count("job symbol");
    size = count("job size");
    if (symbol == 0 || symbol >= r.symbols.size() || size >= r.sizes.size()) {
      user_error("measure request: job out of range");
    }
  }
  return r;
}

std::string format_result(const MeasureResult& r) {
  std::ostringstream out;
  out.precision(17);
  if (r.error.empty()) {
    out << "ok " << r.symbol << " " << r.size << " " << r.ns;
  } else {
    std::string message = r.error;
    for (char& c : message) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    out << "error " << r.symbol << " " << r.size << " " << message;
  }
  return out.str();
}

bool parse_result(const std::string& line, MeasureResult* r) {
  std::istringstream in(line);
  std::string kind;
  if (!(in >> kind >> r->symbol >> r->size)) return false;
  if (kind == "ok") {
    r->error.clear();
    return static_cast<bool>(in >> r->ns);
  }
  if (kind != "error") return false;
  std::getline(in >> std::ws, r->error);
  if (r->error.empty()) r->error = "failed";
  return true;
}

}  // namespace dynvm::tune
