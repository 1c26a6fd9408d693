// Stand-in (see torch/types.h here): the device guard.
#pragma once
#include <torch/types.h>
namespace c10 {
namespace cuda {
struct CUDAGuard {
  explicit CUDAGuard(c10::Device);
};
}  // namespace cuda
}  // namespace c10
