// Probe for issue 33: can the triage counters be read inside the process that
// launches the kernel (CUPTI's range profiler, one kernel replay), instead of
// through ncu's start-up? Loaded by the CUDA driver through
// CUDA_INJECTION64_PATH; profiles the first launch of each kernel and appends
// "kernel<TAB>metric<TAB>value" lines to $KP_CUPTI_OUT.
// Metrics: $KP_CUPTI_METRICS (comma-separated), else the triage set below.
#include <cuda.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

const char* kDefaultMetrics =
    "gpu__time_duration.sum,"
    "sm__throughput.avg.pct_of_peak_sustained_elapsed,"
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,"
    "dram__throughput.avg.pct_of_peak_sustained_elapsed,"
    "lts__throughput.avg.pct_of_peak_sustained_elapsed,"
    "l1tex__throughput.avg.pct_of_peak_sustained_active,"
    "smsp__cycles_elapsed.avg,"
    "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__t_bytes.sum,"
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,"
    "sm__warps_active.avg.pct_of_peak_sustained_active,"
    "smsp__issue_active.avg.pct_of_peak_sustained_active,"
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,"
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";

struct State {
  std::mutex mu;
  std::vector<std::string> names;
  std::vector<const char*> metrics;
  std::vector<uint8_t> config, counterData;
  CUpti_Profiler_Host_Object* host = nullptr;
  CUpti_RangeProfiler_Object* profiler = nullptr;
  CUcontext ctx = nullptr;
  std::set<std::string> seen, sassSeen;
  std::string chip;
  std::vector<CUpti_SassMetrics_Config> sassConfig;
  std::vector<std::string> sassNames;
  bool sassRunning = false;
  std::string current;
  bool running = false, broken = false;
  FILE* out = nullptr;
  std::chrono::steady_clock::time_point t0;
} S;

#define CHECK(call)                                                      \
  do {                                                                   \
    CUptiResult r_ = (call);                                             \
    if (r_ != CUPTI_SUCCESS) {                                           \
      const char* m_ = nullptr;                                          \
      cuptiGetResultString(r_, &m_);                                     \
      fprintf(S.out, "#error\t%s\t%s\n", #call, m_ ? m_ : "?");          \
      fflush(S.out);                                                     \
      S.broken = true;                                                   \
      return;                                                            \
    }                                                                    \
  } while (0)

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// The per-instruction counters the source page gives (SASS patching), for
// the second launch of each kernel: which exist on this chip, and a config.
void setup_sass(uint32_t device) {
  CUpti_SassMetrics_GetNumOfMetrics_Params n = {CUpti_SassMetrics_GetNumOfMetrics_Params_STRUCT_SIZE};
  n.pChipName = S.chip.c_str();
  CHECK(cuptiSassMetricsGetNumOfMetrics(&n));
  std::vector<CUpti_SassMetrics_MetricDetails> list(n.numOfMetrics);
  CUpti_SassMetrics_GetMetrics_Params g = {CUpti_SassMetrics_GetMetrics_Params_STRUCT_SIZE};
  g.pChipName = S.chip.c_str();
  g.numOfMetrics = n.numOfMetrics;
  g.pMetricsList = list.data();
  CHECK(cuptiSassMetricsGetMetrics(&g));
  const char* want = getenv("KP_CUPTI_SASS");
  std::string wanted = want && *want ? want
      : "smsp__sass_inst_executed,smsp__sass_thread_inst_executed,smsp__sass_sectors_mem_global,"
        "smsp__sass_inst_executed_op_global_ld,smsp__sass_inst_executed_op_global_st,"
        "smsp__sass_sectors_mem_global_ideal,smsp__sass_inst_executed_op_shared_ld";
  for (auto& m : list) {
    fprintf(S.out, "#sass_metric\t%s\n", m.pMetricName);
    std::string key = std::string(",") + m.pMetricName + ",";
    if ((std::string(",") + wanted + ",").find(key) != std::string::npos) {
      S.sassConfig.push_back({m.metricId, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU});
      S.sassNames.push_back(m.pMetricName);
    }
  }
  if (S.sassConfig.empty()) return;
  CUpti_SassMetricsSetConfig_Params sc = {CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
  sc.numOfMetricConfig = S.sassConfig.size();
  sc.pConfigs = S.sassConfig.data();
  sc.deviceIndex = device;
  CHECK(cuptiSassMetricsSetConfig(&sc));
}

void sass_begin(const char* kernel) {
  S.t0 = std::chrono::steady_clock::now();
  CUpti_SassMetricsEnable_Params en = {CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
  en.ctx = S.ctx;
  en.enableLazyPatching = 1;
  CHECK(cuptiSassMetricsEnable(&en));
  S.current = kernel;
  S.sassRunning = true;
}

void sass_end() {
  S.sassRunning = false;
  cuCtxSynchronize();
  CUpti_SassMetricsGetDataProperties_Params dp = {CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
  dp.ctx = S.ctx;
  CHECK(cuptiSassMetricsGetDataProperties(&dp));
  size_t records = dp.numOfPatchedInstructionRecords, inst = dp.numOfInstances;
  if (records > 0) {
    std::vector<CUpti_SassMetrics_Data> data(records);
    std::vector<CUpti_SassMetrics_InstanceValue> values(records * inst * S.sassConfig.size());
    for (size_t i = 0; i < records; i++) {
      data[i].structSize = sizeof(CUpti_SassMetrics_Data);
      data[i].pInstanceValues = values.data() + i * inst * S.sassConfig.size();
    }
    CUpti_SassMetricsFlushData_Params fl = {CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
    fl.ctx = S.ctx;
    fl.numOfPatchedInstructionRecords = records;
    fl.numOfInstances = inst;
    fl.pMetricsData = data.data();
    CHECK(cuptiSassMetricsFlushData(&fl));
    for (auto& d : data) {
      for (size_t m = 0; m < S.sassConfig.size() * inst; m++) {
        auto& v = d.pInstanceValues[m];
        if (v.value == 0) continue;
        const char* name = "?";
        for (size_t k = 0; k < S.sassConfig.size(); k++)
          if (S.sassConfig[k].metricId == v.metricId) name = S.sassNames[k].c_str();
        fprintf(S.out, "#pc\t%s\t0x%x\t%s\t%llu\n", d.functionName ? d.functionName : "?", d.pcOffset, name,
                (unsigned long long)v.value);
      }
    }
  }
  CUpti_SassMetricsDisable_Params di = {CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
  di.ctx = S.ctx;
  CHECK(cuptiSassMetricsDisable(&di));
  fprintf(S.out, "#sass\t%s\trecords=%zu\tinstances=%zu\tms=%.1f\n", S.current.c_str(), records, inst, ms_since(S.t0));
  fflush(S.out);
}

// Everything that needs the context: host object, config image, the range
// profiler on this context, its counter data image.
void setup(CUcontext ctx) {
  auto t = std::chrono::steady_clock::now();
  S.ctx = ctx;
  CUpti_Profiler_Initialize_Params init = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CHECK(cuptiProfilerInitialize(&init));
  CUdevice dev;
  cuCtxGetDevice(&dev);
  CUpti_Device_GetChipName_Params chip = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = (size_t)dev;
  CHECK(cuptiDeviceGetChipName(&chip));
  CUpti_Profiler_GetCounterAvailability_Params avail = {CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  avail.ctx = ctx;
  CHECK(cuptiProfilerGetCounterAvailability(&avail));
  std::vector<uint8_t> availImage(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = availImage.data();
  CHECK(cuptiProfilerGetCounterAvailability(&avail));

  CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  hi.pChipName = chip.pChipName;
  hi.pCounterAvailabilityImage = availImage.data();
  CHECK(cuptiProfilerHostInitialize(&hi));
  S.host = hi.pHostObject;
  CUpti_Profiler_Host_ConfigAddMetrics_Params add = {CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = S.host;
  add.ppMetricNames = S.metrics.data();
  add.numMetrics = S.metrics.size();
  CHECK(cuptiProfilerHostConfigAddMetrics(&add));
  CUpti_Profiler_Host_GetConfigImageSize_Params cs = {CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  cs.pHostObject = S.host;
  CHECK(cuptiProfilerHostGetConfigImageSize(&cs));
  S.config.resize(cs.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params ci = {CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  ci.pHostObject = S.host;
  ci.configImageSize = S.config.size();
  ci.pConfigImage = S.config.data();
  CHECK(cuptiProfilerHostGetConfigImage(&ci));
  CUpti_Profiler_Host_GetNumOfPasses_Params np = {CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  np.configImageSize = S.config.size();
  np.pConfigImage = S.config.data();
  CHECK(cuptiProfilerHostGetNumOfPasses(&np));

  CUpti_RangeProfiler_Enable_Params en = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  en.ctx = ctx;
  CHECK(cuptiRangeProfilerEnable(&en));
  S.profiler = en.pRangeProfilerObject;
  CUpti_RangeProfiler_GetCounterDataSize_Params ds = {CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  ds.pRangeProfilerObject = S.profiler;
  ds.pMetricNames = S.metrics.data();
  ds.numMetrics = S.metrics.size();
  ds.maxNumOfRanges = 1;
  ds.maxNumRangeTreeNodes = 1;
  CHECK(cuptiRangeProfilerGetCounterDataSize(&ds));
  S.counterData.resize(ds.counterDataSize);
  S.chip = chip.pChipName;
  setup_sass((uint32_t)dev);
  fprintf(S.out, "#setup\tchip=%s\tpasses=%zu\tms=%.1f\n", chip.pChipName, np.numOfPasses, ms_since(t));
  fflush(S.out);
}

// One range over the next launch: a fresh counter data image, the config, start.
void begin(const char* kernel) {
  S.t0 = std::chrono::steady_clock::now();
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params di = {
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  di.pRangeProfilerObject = S.profiler;
  di.counterDataSize = S.counterData.size();
  di.pCounterData = S.counterData.data();
  CHECK(cuptiRangeProfilerCounterDataImageInitialize(&di));
  CUpti_RangeProfiler_SetConfig_Params sc = {CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  sc.pRangeProfilerObject = S.profiler;
  sc.configSize = S.config.size();
  sc.pConfig = S.config.data();
  sc.counterDataImageSize = S.counterData.size();
  sc.pCounterDataImage = S.counterData.data();
  sc.range = CUPTI_AutoRange;
  sc.replayMode = CUPTI_KernelReplay;
  sc.maxRangesPerPass = 1;
  sc.numNestingLevels = 1;
  sc.minNestingLevel = 1;
  sc.passIndex = 0;
  sc.targetNestingLevel = 1;
  CHECK(cuptiRangeProfilerSetConfig(&sc));
  CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  st.pRangeProfilerObject = S.profiler;
  CHECK(cuptiRangeProfilerStart(&st));
  S.current = kernel;
  S.running = true;
}

// Stop after the launch (kernel replay has run every pass), decode, evaluate.
void end() {
  S.running = false;
  CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  sp.pRangeProfilerObject = S.profiler;
  CHECK(cuptiRangeProfilerStop(&sp));
  CUpti_RangeProfiler_DecodeData_Params dd = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  dd.pRangeProfilerObject = S.profiler;
  CHECK(cuptiRangeProfilerDecodeData(&dd));
  CUpti_RangeProfiler_GetCounterDataInfo_Params info = {CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = S.counterData.data();
  info.counterDataImageSize = S.counterData.size();
  CHECK(cuptiRangeProfilerGetCounterDataInfo(&info));
  std::vector<double> values(S.metrics.size());
  for (size_t r = 0; r < info.numTotalRanges; r++) {
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    ev.pHostObject = S.host;
    ev.pCounterDataImage = S.counterData.data();
    ev.counterDataImageSize = S.counterData.size();
    ev.rangeIndex = r;
    ev.ppMetricNames = S.metrics.data();
    ev.numMetrics = S.metrics.size();
    ev.pMetricValues = values.data();
    CHECK(cuptiProfilerHostEvaluateToGpuValues(&ev));
    for (size_t m = 0; m < S.metrics.size(); m++)
      fprintf(S.out, "%s\t%s\t%.6g\n", S.current.c_str(), S.metrics[m], values[m]);
  }
  fprintf(S.out, "#kernel\t%s\tranges=%zu\tdropped=%zu\tms=%.1f\n", S.current.c_str(), info.numTotalRanges,
          dd.numOfRangeDropped, ms_since(S.t0));
  fflush(S.out);
}

void CUPTIAPI callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  std::lock_guard<std::mutex> lock(S.mu);
  if (S.broken) return;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    if (!S.profiler) setup(static_cast<const CUpti_ResourceData*>(data)->context);
    return;
  }
  // Launches reach us from the runtime and, beneath it, the driver: the
  // first enter begins the range, the first exit (the driver's) ends it.
  auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (!S.profiler) return;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    std::string name = cb->symbolName ? cb->symbolName : "?";
    if (S.running || S.sassRunning) return;
    if (S.seen.insert(name).second) {
      begin(name.c_str());
    } else if (!S.sassConfig.empty() && S.sassSeen.insert(name).second) {
      sass_begin(name.c_str());
    }
  } else if (S.running) {
    end();
  } else if (S.sassRunning) {
    sass_end();
  }
}

}  // namespace

extern "C" int InitializeInjection() {
  static bool once = false;
  if (once) return 1;
  once = true;
  if (getenv("KP_CUPTI_DEBUG")) fprintf(stderr, "kp_inject: InitializeInjection\n");
  const char* path = getenv("KP_CUPTI_OUT");
  S.out = path ? fopen(path, "a") : stderr;
  if (!S.out) S.out = stderr;
  const char* list = getenv("KP_CUPTI_METRICS");
  std::string all = list && *list ? list : kDefaultMetrics;
  size_t pos = 0;
  while (pos <= all.size()) {
    size_t comma = all.find(',', pos);
    if (comma == std::string::npos) comma = all.size();
    if (comma > pos) S.names.push_back(all.substr(pos, comma - pos));
    pos = comma + 1;
  }
  for (auto& n : S.names) S.metrics.push_back(n.c_str());
  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, (CUpti_CallbackFunc)callback, nullptr) != CUPTI_SUCCESS) {
    fprintf(S.out, "#error\tcuptiSubscribe\n");
    return 0;
  }
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060);
  return 1;
}

// Where the driver does not call InitializeInjection, LD_PRELOAD works too.
__attribute__((constructor)) static void kp_preload() {
  if (getenv("KP_CUPTI_PRELOAD")) InitializeInjection();
}
