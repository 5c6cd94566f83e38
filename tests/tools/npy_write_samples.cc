// Writes every sample of npy_samples.h with vm::write_npy into the directory given, for
// npy_numpy.py to read back with NumPy (ctest: tools.npy_numpy_reads_ours).
#include <cstdio>
#include <filesystem>

#include "tests/tools/npy_samples.h"
#include "vm/error.h"
#include "vm/npy.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: npy_write_samples DIR\n");
    return 2;
  }
  try {
    std::filesystem::create_directories(argv[1]);
    for (const auto& sample : dynvm::testing::npy_samples()) {
      std::string path = (std::filesystem::path(argv[1]) / (sample.name + ".npy")).string();
      dynvm::vm::write_npy(dynvm::testing::npy_sample_tensor(sample), path);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "npy_write_samples: %s\n", e.what());
    return 1;
  }
  return 0;
}
