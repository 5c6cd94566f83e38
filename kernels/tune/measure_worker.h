// The measuring child process of the tuner (measure.h starts it; vmtune --measure-worker is
// its entry point). It loads a kernel library, runs the reference and each candidate
// kernel on the same seeded random inputs at every requested size, checks each
// candidate's outputs against the reference's, times it, and prints one result line per
// job (measure_protocol.h). It trusts nothing it runs: a candidate that crashes or hangs
// takes only this process down, and the parent knows which job it was.
#pragma once

#include <iosfwd>
#include <string>

namespace dynvm::tune {

// Returns the process exit code: 0 when every job was answered (measured or refused), 1
// when the request or library could not be read (one line on `err`).
int run_measure_worker(const std::string& request_path, const std::string& library_path,
                       std::ostream& out, std::ostream& err);

}  // namespace dynvm::tune
