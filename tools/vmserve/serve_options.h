// vmserve's command line: the models to serve and the server's and models' options.
// Parsing checks only the command line's shape; whether a file is a model is for loading.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/vmserve/http_server.h"
#include "tools/vmserve/served_model.h"

namespace dynvm::serve {

struct ModelArg {
  std::string name;  // NAME=PATH, or the file's base name without .vmexe
  std::string path;
  bool batching = false;
  std::map<std::string, int> batch_axes;  // --batch NAME:TENSOR=AXIS,...
};

struct ServeOptions {
  std::vector<ModelArg> models;
  ServerOptions server;
  ModelOptions model;  // shared by every model; batching is per model (ModelArg)
  std::string shapes_out = "vmserve.shapes.json";  // empty: not written
  bool help = false;
  bool version = false;
};

// Throws UsageError.
ServeOptions parse_serve_options(int argc, const char* const* argv);
std::string serve_usage_text();

}  // namespace dynvm::serve
