// Reads the graph IR's text form (printer.h) into a Module: for tests, fixtures and
// debugging. Dims in types are arith expressions over the module's dim symbols (one
// arith::VarScope for the whole module, so `seq` is the same symbol everywhere). Errors
// are one UserError line, "file:line:col: message".
#pragma once

#include <string>
#include <string_view>

#include "compiler/ir/module.h"

namespace dynvm::compiler {

Module parse_module(std::string_view text, const std::string& file_name = "<ir>");

}  // namespace dynvm::compiler
