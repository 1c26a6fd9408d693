// Pass count of a range-profiler metric list, on the CPU (issue 33): Perfworks' host
// library schedules the metrics' raw counters into passes without a driver (CUPTI's own
// host API, cuptiProfilerHostInitialize, dlopens libcuda.so.1 first and fails without one).
//   pip install --target /tmp/cupti nvidia-cuda-cupti; L=/tmp/cupti/nvidia/cu13
//   g++ -I$L/include cupti_passes.cpp -o passes -L$L/lib -l:libnvperf_host.so -Wl,-rpath,$L/lib
//   ./passes GH100 "$(sed -n '/^pub const RANGE_METRICS/,/^];/p' server/profile/src/cupti.rs | grep -o '"[^"]*"' | tr -d '"' | paste -sd,)"
// GH100, before the cut (80 metrics): 17 (the H200 run's #setup said 16); after (49): 15.
#include <nvperf_host.h>
#include <nvperf_cuda_host.h>
#include <cstdio>
#include <string>
#include <vector>
#define OK(x) do { NVPA_Status s_ = (x); if (s_ != NVPA_STATUS_SUCCESS) { fprintf(stderr, "%s: %d\n", #x, s_); return 1; } } while (0)
int main(int argc, char** argv) {
  std::vector<std::string> names;
  std::string all = argv[2];
  for (size_t pos = 0; pos <= all.size();) {
    size_t c = all.find(',', pos);
    if (c == std::string::npos) c = all.size();
    if (c > pos) names.push_back(all.substr(pos, c - pos));
    pos = c + 1;
  }
  NVPW_InitializeHost_Params ih = {NVPW_InitializeHost_Params_STRUCT_SIZE};
  OK(NVPW_InitializeHost(&ih));
  NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params sb = {NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params_STRUCT_SIZE};
  sb.pChipName = argv[1];
  OK(NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize(&sb));
  std::vector<uint8_t> scratch(sb.scratchBufferSize);
  NVPW_CUDA_MetricsEvaluator_Initialize_Params ei = {NVPW_CUDA_MetricsEvaluator_Initialize_Params_STRUCT_SIZE};
  ei.pScratchBuffer = scratch.data();
  ei.scratchBufferSize = scratch.size();
  ei.pChipName = argv[1];
  OK(NVPW_CUDA_MetricsEvaluator_Initialize(&ei));
  std::vector<std::string> raw;
  for (auto& n : names) {
    NVPW_MetricEvalRequest req;
    NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params cv = {NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params_STRUCT_SIZE};
    cv.pMetricsEvaluator = ei.pMetricsEvaluator;
    cv.pMetricName = n.c_str();
    cv.pMetricEvalRequest = &req;
    cv.metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE;
    if (NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest(&cv) != NVPA_STATUS_SUCCESS) { fprintf(stderr, "unknown %s\n", n.c_str()); continue; }
    NVPW_MetricsEvaluator_GetMetricRawDependencies_Params rd = {NVPW_MetricsEvaluator_GetMetricRawDependencies_Params_STRUCT_SIZE};
    rd.pMetricsEvaluator = ei.pMetricsEvaluator;
    rd.pMetricEvalRequests = &req;
    rd.numMetricEvalRequests = 1;
    rd.metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE;
    rd.metricEvalRequestStrideSize = sizeof(NVPW_MetricEvalRequest);
    OK(NVPW_MetricsEvaluator_GetMetricRawDependencies(&rd));
    std::vector<const char*> deps(rd.numRawDependencies);
    rd.ppRawDependencies = deps.data();
    OK(NVPW_MetricsEvaluator_GetMetricRawDependencies(&rd));
    for (auto* d : deps) raw.push_back(d);
  }
  std::vector<NVPA_RawMetricRequest> reqs;
  for (auto& r : raw) {
    NVPA_RawMetricRequest q = {NVPA_RAW_METRIC_REQUEST_STRUCT_SIZE};
    q.pMetricName = r.c_str();
    q.isolated = 1;
    q.keepInstances = 1;
    reqs.push_back(q);
  }
  NVPW_CUDA_RawMetricsConfig_Create_V2_Params cc = {NVPW_CUDA_RawMetricsConfig_Create_V2_Params_STRUCT_SIZE};
  cc.activityKind = NVPA_ACTIVITY_KIND_PROFILER;
  cc.pChipName = argv[1];
  OK(NVPW_CUDA_RawMetricsConfig_Create_V2(&cc));
  NVPW_RawMetricsConfig_BeginPassGroup_Params bp = {NVPW_RawMetricsConfig_BeginPassGroup_Params_STRUCT_SIZE};
  bp.pRawMetricsConfig = cc.pRawMetricsConfig;
  OK(NVPW_RawMetricsConfig_BeginPassGroup(&bp));
  NVPW_RawMetricsConfig_AddMetrics_Params am = {NVPW_RawMetricsConfig_AddMetrics_Params_STRUCT_SIZE};
  am.pRawMetricsConfig = cc.pRawMetricsConfig;
  am.pRawMetricRequests = reqs.data();
  am.numMetricRequests = reqs.size();
  OK(NVPW_RawMetricsConfig_AddMetrics(&am));
  NVPW_RawMetricsConfig_EndPassGroup_Params ep = {NVPW_RawMetricsConfig_EndPassGroup_Params_STRUCT_SIZE};
  ep.pRawMetricsConfig = cc.pRawMetricsConfig;
  OK(NVPW_RawMetricsConfig_EndPassGroup(&ep));
  NVPW_RawMetricsConfig_GenerateConfigImage_Params gi = {NVPW_RawMetricsConfig_GenerateConfigImage_Params_STRUCT_SIZE};
  gi.pRawMetricsConfig = cc.pRawMetricsConfig;
  OK(NVPW_RawMetricsConfig_GenerateConfigImage(&gi));
  NVPW_RawMetricsConfig_GetNumPasses_V2_Params np = {NVPW_RawMetricsConfig_GetNumPasses_V2_Params_STRUCT_SIZE};
  np.pRawMetricsConfig = cc.pRawMetricsConfig;
  OK(NVPW_RawMetricsConfig_GetNumPasses_V2(&np));
  printf("%zu\n", np.numPasses);
}
