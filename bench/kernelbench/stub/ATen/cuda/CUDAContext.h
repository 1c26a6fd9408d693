// Stand-in (see torch/types.h here): the current and pooled streams.
#pragma once
#include <torch/types.h>
namespace at {
namespace cuda {
cudaStream_t getCurrentCUDAStream();
cudaStream_t getStreamFromPool(bool high_priority = false);
}  // namespace cuda
}  // namespace at
