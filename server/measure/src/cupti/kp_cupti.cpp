// KernelPro's in-process profiler (issue 33): loaded into the program that
// launches the kernel through CUDA_INJECTION64_PATH, it reads the counters
// that `kernelpro profile` would ask one ncu launch for, without ncu's start-up:
//   - the first launch of each kernel: CUPTI's range profiler over one
//     replayed launch (every pass), for $KP_CUPTI_METRICS, plus the launch's
//     own numbers (registers, shared memory, occupancy limits) and the device's;
//   - the second launch: CUPTI's SASS metrics (per-instruction counters) for
//     $KP_CUPTI_SASS, by function and PC offset;
//   - every module's cubin, written to $KP_CUPTI_DIR, for the disassembly
//     that ties PC offsets to source lines.
// $KP_CUPTI_CACHE: a folder where the range profiler's configuration is kept
// between processes (config_cache.h).
// $KP_CUPTI_KERNEL: only the kernel of this name (the harness's own fill and
// compare kernels are left alone), or of these names, comma-separated (a
// program's kernels that changed since its last profile).
//   - with `pc` in the plan: CUPTI's PC sampling (stall reasons per PC).
// $KP_CUPTI_PLAN: what the 1st, 2nd, ... launch of each kernel is for, from
// `range`, `sass`, `pc` (default `range,sass`). After `range` or `sass`, PC
// sampling is set up at its first launch (the range profiler disabled
// first), and where CUPTI refuses, a `#warn pc` record says so and the
// process goes on without samples.
// Output, appended to $KP_CUPTI_OUT, one record a line, tab-separated:
//   M <tab> demangled <tab> mangled <tab> metric <tab> value
//   P <tab> mangled <tab> pc offset (hex) <tab> metric <tab> value
//   S <tab> mangled <tab> pc offset (hex) <tab> stall reason <tab> samples
//   C <tab> cubin path
//   #skip <tab> metric (not collectable here), #error <tab> what, #warn <tab> what,
//   #setup/#kernel/#sass/#pc <tab> timings (`#setup` first names the chip and the driver)
// The parser is kernelpro_profile::cupti::parse_cupti.
#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>
#include <cxxabi.h>
#include <unistd.h>

#include "config_cache.h"  // inlined by the Rust side when it writes this file out

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

struct Launch {
  CUfunction f = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned dynamicShared = 0;
  bool known = false;
};

struct State {
  // Recursive: the callback's own driver calls re-enter it on the same thread (as_function's
  // cuFuncLoad of a lazily loaded kernel fires MODULE_LOADED), which a plain mutex deadlocked:
  // every runtime program hung under lazy loading on the H100.
  std::recursive_mutex mu;
  std::vector<std::string> names;
  std::vector<const char*> metrics;
  std::vector<uint8_t> config, counterData;
  CUpti_Profiler_Host_Object* host = nullptr;
  CUpti_RangeProfiler_Object* profiler = nullptr;
  CUcontext ctx = nullptr;
  CUdevice dev = 0;
  int driver = 0;
  std::set<std::string> seen, sassSeen;
  std::string chip, dir, cacheDir;
  std::vector<std::string> onlyNames;  // KP_CUPTI_KERNEL's names
  bool hostHasConfig = false;
  std::vector<std::string> plan = {"range", "sass"};
  std::map<std::string, int> launches;
  bool wantRange = false, wantSass = false, wantPc = false;
  // PC sampling.
  std::vector<std::string> stallNames;
  std::vector<uint32_t> stallIndex;
  CUpti_PCSamplingData pcData = {};
  bool pcRunning = false;
  // PC sampling after the range profiler or SASS metrics in this process:
  // set up at its first launch, not with the context; its failures are
  // warnings (pcOff: no samples from this process).
  bool pcLate = false, pcOff = false, rangeEnabled = false, profilerDown = false;
  std::vector<CUpti_SassMetrics_Config> sassConfig;
  std::vector<std::string> sassNames;
  bool sassRunning = false, sassEnabled = false, sassLazy = true;
  // A kernel's SASS pass gave records only where the kernel had launched before in the process
  // (H100, 2026-12-07: not where the pass begins, nor the context, nor module loading):
  // KP_CUPTI_SASS_WARM=1 launches it once more, unpatched, just before its pass, at the driver's
  // launch (a runtime launch's pass waits for it: `sassPending`), with the program's own arguments.
  // The program's data then sees the kernel twice: a probe of the cause, not on by default.
  bool sassWarm = false, warming = false, sassPending = false;
  // Two processes of one harness profile at once (issue 33): the range profile and SASS pass in one,
  // PC sampling in the other, which the H100 refuses while the first profiles. `doneFile`
  // (KP_CUPTI_DONE): the first releases the profiler after its plan's last step and creates this
  // file; `waitFor` (KP_CUPTI_WAIT_FOR): the second enables and starts sampling only once it exists
  // (the Rust driver also creates it when the first process ends), so its start-up overlaps the first.
  std::string doneFile, waitFor;
  bool released = false;
  // The profiled kernel's time in this process's range profile (ns), written into `doneFile` so
  // that the sampling process sets its period by it (`period_for`); 0 where unknown.
  double durationNs = 0;
  // PC sampling's period exponent (2^n cycles): KP_CUPTI_PC_PERIOD, else from `waitFor`'s duration.
  int pcPeriod = 9;
  std::string current, currentMangled;
  Launch launch;
  bool running = false, broken = false;
  int modules = 0;
  FILE* out = nullptr;
  std::chrono::steady_clock::time_point t0;
} S;

#define CHECK(call)                                             \
  do {                                                          \
    CUptiResult r_ = (call);                                    \
    if (r_ != CUPTI_SUCCESS) {                                  \
      const char* m_ = nullptr;                                 \
      cuptiGetResultString(r_, &m_);                            \
      fprintf(S.out, "#error\t%s\t%s\n", #call, m_ ? m_ : "?"); \
      fflush(S.out);                                            \
      S.broken = true;                                          \
      return;                                                   \
    }                                                           \
  } while (0)

// PC sampling's calls: where it comes late in the process, a failure is a
// `#warn pc` and the process goes on without samples (the Rust driver then
// samples in a run of its own); else as CHECK.
#define PC_CHECK(call)                                                \
  do {                                                                \
    CUptiResult r_ = (call);                                          \
    if (r_ != CUPTI_SUCCESS) {                                        \
      const char* m_ = nullptr;                                       \
      cuptiGetResultString(r_, &m_);                                  \
      if (S.pcLate) {                                                 \
        fprintf(S.out, "#warn\tpc\t%s\t%s\n", #call, m_ ? m_ : "?"); \
        S.pcOff = true;                                               \
        S.pcRunning = false;                                          \
      } else {                                                        \
        fprintf(S.out, "#error\t%s\t%s\n", #call, m_ ? m_ : "?");    \
        S.broken = true;                                              \
      }                                                               \
      fflush(S.out);                                                  \
      return;                                                         \
    }                                                                 \
  } while (0)

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

std::string demangle(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return mangled;
  std::string s = d;
  free(d);
  return s;
}

// Whether a demangled name (`void ns::k<float>(float*, int)`) is the kernel `want`.
bool is_kernel(const std::string& demangled, const std::string& want) {
  for (size_t at = demangled.find(want); at != std::string::npos; at = demangled.find(want, at + 1)) {
    char before = at == 0 ? ' ' : demangled[at - 1];
    char after = at + want.size() < demangled.size() ? demangled[at + want.size()] : '(';
    if ((before == ' ' || before == ':') && (after == '(' || after == '<')) return true;
  }
  return false;
}

std::vector<std::string> split(const std::string& all) { return kp::split_commas(all); }

// Whether the kernel is one `KP_CUPTI_KERNEL` names (every kernel where it names none).
bool wanted(const std::string& demangled) {
  if (S.onlyNames.empty()) return true;
  for (auto& want : S.onlyNames)
    if (is_kernel(demangled, want)) return true;
  return false;
}

void metric(const char* name, double value) {
  fprintf(S.out, "M\t%s\t%s\t%s\t%.10g\n", S.current.c_str(), S.currentMangled.c_str(), name, value);
}

// The per-instruction counters (SASS patching) this chip has, among those asked for.
void setup_sass() {
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
  std::string wanted = std::string(",") + (want ? want : "") + ",";
  for (auto& m : list) {
    if (wanted.find(std::string(",") + m.pMetricName + ",") != std::string::npos) {
      S.sassConfig.push_back({m.metricId, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU});
      S.sassNames.push_back(m.pMetricName);
    }
  }
  for (auto& w : split(want ? want : "")) {
    bool have = false;
    for (auto& n : S.sassNames) have = have || n == w;
    if (!have) fprintf(S.out, "#skip\t%s\tno such SASS metric on %s\n", w.c_str(), S.chip.c_str());
  }
  if (S.sassConfig.empty()) return;
  CUpti_SassMetricsSetConfig_Params sc = {CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
  sc.numOfMetricConfig = S.sassConfig.size();
  sc.pConfigs = S.sassConfig.data();
  sc.deviceIndex = (uint32_t)S.dev;
  CHECK(cuptiSassMetricsSetConfig(&sc));
}

void sass_begin() {
  S.t0 = std::chrono::steady_clock::now();
  if (!S.sassEnabled) {
    CUpti_SassMetricsEnable_Params en = {CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
    en.ctx = S.ctx;
    // Lazy: each function patched as it launches (a program's later kernels
    // are not loaded yet); KP_CUPTI_SASS_LAZY=0 patches every loaded one now.
    en.enableLazyPatching = S.sassLazy ? 1 : 0;
    CHECK(cuptiSassMetricsEnable(&en));
    S.sassEnabled = true;
  }
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
        const char* name = nullptr;
        for (size_t k = 0; k < S.sassConfig.size(); k++)
          if (S.sassConfig[k].metricId == v.metricId) name = S.sassNames[k].c_str();
        if (!name) continue;
        fprintf(S.out, "P\t%s\t0x%x\t%s\t%llu\n", d.functionName ? d.functionName : "?", d.pcOffset, name,
                (unsigned long long)v.value);
      }
    }
  }
  // Disabling unpatches; the next kernel's SASS pass enables again.
  CUpti_SassMetricsDisable_Params di = {CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
  di.ctx = S.ctx;
  CHECK(cuptiSassMetricsDisable(&di));
  S.sassEnabled = false;
  fprintf(S.out, "#sass\t%s\trecords=%zu\tinstances=%zu\tms=%.1f\n", S.current.c_str(), records, inst,
          ms_since(S.t0));
  fflush(S.out);
}

// PC sampling: every stall reason, serialized kernels, started and stopped
// around the one launch it is for.
void setup_pc() {
  CUpti_PCSamplingEnableParams en = {CUpti_PCSamplingEnableParamsSize};
  en.ctx = S.ctx;
  PC_CHECK(cuptiPCSamplingEnable(&en));
  size_t n = 0;
  CUpti_PCSamplingGetNumStallReasonsParams np = {CUpti_PCSamplingGetNumStallReasonsParamsSize};
  np.ctx = S.ctx;
  np.numStallReasons = &n;
  PC_CHECK(cuptiPCSamplingGetNumStallReasons(&np));
  std::vector<char*> names(n);
  for (auto& p : names) p = static_cast<char*>(calloc(CUPTI_STALL_REASON_STRING_SIZE, 1));
  S.stallIndex.resize(n);
  CUpti_PCSamplingGetStallReasonsParams sr = {CUpti_PCSamplingGetStallReasonsParamsSize};
  sr.ctx = S.ctx;
  sr.numStallReasons = n;
  sr.stallReasonIndex = S.stallIndex.data();
  sr.stallReasons = names.data();
  PC_CHECK(cuptiPCSamplingGetStallReasons(&sr));
  for (auto* p : names) {
    S.stallNames.push_back(p);
    free(p);
  }
  const size_t pcs = 20000;
  S.pcData.size = sizeof(CUpti_PCSamplingData);
  S.pcData.collectNumPcs = pcs;
  S.pcData.pPcData = static_cast<CUpti_PCSamplingPCData*>(calloc(pcs, sizeof(CUpti_PCSamplingPCData)));
  for (size_t i = 0; i < pcs; i++) {
    S.pcData.pPcData[i].size = sizeof(CUpti_PCSamplingPCData);
    S.pcData.pPcData[i].stallReason =
        static_cast<CUpti_PCSamplingStallReason*>(calloc(n, sizeof(CUpti_PCSamplingStallReason)));
  }
  std::vector<CUpti_PCSamplingConfigurationInfo> cfg(6);
  cfg[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
  cfg[0].attributeData.collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
  cfg[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
  cfg[1].attributeData.samplingPeriodData.samplingPeriod = getenv("KP_CUPTI_PC_PERIOD") ? atoi(getenv("KP_CUPTI_PC_PERIOD")) : S.pcPeriod;
  cfg[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
  cfg[2].attributeData.stallReasonData.stallReasonCount = n;
  cfg[2].attributeData.stallReasonData.pStallReasonIndex = S.stallIndex.data();
  cfg[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
  cfg[3].attributeData.samplingDataBufferData.samplingDataBuffer = &S.pcData;
  cfg[4].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
  cfg[4].attributeData.enableStartStopControlData.enableStartStopControl = 1;
  cfg[5].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
  cfg[5].attributeData.outputDataFormatData.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
  CUpti_PCSamplingConfigurationInfoParams cp = {CUpti_PCSamplingConfigurationInfoParamsSize};
  cp.ctx = S.ctx;
  cp.numAttributes = cfg.size();
  cp.pPCSamplingConfigurationInfo = cfg.data();
  PC_CHECK(cuptiPCSamplingSetConfigurationAttribute(&cp));
}

void pc_begin() {
  S.t0 = std::chrono::steady_clock::now();
  CUpti_PCSamplingStartParams st = {CUpti_PCSamplingStartParamsSize};
  st.ctx = S.ctx;
  PC_CHECK(cuptiPCSamplingStart(&st));
  S.pcRunning = true;
}

void pc_emit(CUpti_PCSamplingData& d, uint64_t& total) {
  for (size_t i = 0; i < d.totalNumPcs; i++) {
    auto& pc = d.pPcData[i];
    for (size_t r = 0; r < pc.stallReasonCount; r++) {
      auto& sr = pc.stallReason[r];
      if (sr.samples == 0) continue;
      const char* name = "?";
      for (size_t k = 0; k < S.stallIndex.size(); k++)
        if (S.stallIndex[k] == sr.pcSamplingStallReasonIndex) name = S.stallNames[k].c_str();
      fprintf(S.out, "S\t%s\t0x%llx\t%s\t%u\n", pc.functionName ? pc.functionName : "?",
              (unsigned long long)pc.pcOffset, name, sr.samples);
      total += sr.samples;
    }
  }
  d.totalNumPcs = 0;
}

void pc_end() {
  S.pcRunning = false;
  cuCtxSynchronize();
  CUpti_PCSamplingStopParams sp = {CUpti_PCSamplingStopParamsSize};
  sp.ctx = S.ctx;
  PC_CHECK(cuptiPCSamplingStop(&sp));
  uint64_t total = 0, dropped = S.pcData.droppedSamples;
  pc_emit(S.pcData, total);
  CUpti_PCSamplingGetDataParams gd = {CUpti_PCSamplingGetDataParamsSize};
  gd.ctx = S.ctx;
  gd.pcSamplingData = &S.pcData;
  for (int i = 0; i < 64 && cuptiPCSamplingGetData(&gd) == CUPTI_SUCCESS; i++) {
    bool more = S.pcData.remainingNumPcs > 0;
    dropped += S.pcData.droppedSamples;
    pc_emit(S.pcData, total);
    if (!more) break;
  }
  fprintf(S.out, "#pc\t%s\tsamples=%llu\tdropped=%llu\tms=%.1f\n", S.current.c_str(),
          (unsigned long long)total, (unsigned long long)dropped, ms_since(S.t0));
  fflush(S.out);
}

// The range profiler off (`rangeEnabled` follows), and the profiler deinitialized (`profilerDown`
// follows): what PC sampling after them in this process, or in another one, needs first.
CUptiResult disable_range() {
  if (!S.rangeEnabled) return CUPTI_SUCCESS;
  CUpti_RangeProfiler_Disable_Params d = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
  d.pRangeProfilerObject = S.profiler;
  CUptiResult r = cuptiRangeProfilerDisable(&d);
  if (r == CUPTI_SUCCESS) S.rangeEnabled = false;
  return r;
}

bool deinit_profiler() {
  if (S.profilerDown) return true;
  CUpti_Profiler_DeInitialize_Params di = {CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
  S.profilerDown = cuptiProfilerDeInitialize(&di) == CUPTI_SUCCESS;
  return S.profilerDown;
}

// PC sampling after the range profiler and SASS metrics in one process
// (issue 33: one process instead of two where CUPTI allows it). CUPTI's
// profiling and PC-sampling APIs do not share a context, so the range
// profiler is disabled first (SASS metrics already are: sass_end); then PC
// sampling is enabled from this launch on. Whether the driver allows it is
// only known by trying: any failure is a `#warn pc` and no samples.
bool pc_late() {
  if (S.pcOff) return false;
  if (!S.stallNames.empty()) return true;
  if (CUptiResult r = disable_range(); r != CUPTI_SUCCESS) {
    const char* m = nullptr;
    cuptiGetResultString(r, &m);
    fprintf(S.out, "#warn\tpc\tcuptiRangeProfilerDisable\t%s\n", m ? m : "?");
    fflush(S.out);
    S.pcOff = true;
    return false;
  }
  setup_pc();
  if (S.pcOff && S.stallNames.empty() && !S.profilerDown) {
    // Refused while the profiler is initialized: once more without it (no
    // SASS pass can follow in this process then).
    if (deinit_profiler()) {
      S.pcOff = false;
      fprintf(S.out, "#warn\tpc retried\twithout the profiler initialized\n");
      setup_pc();
    }
  }
  return !S.pcOff && !S.stallNames.empty();
}

// Whether the range profiler can collect this metric on this chip: a
// throwaway host object per metric, so one unknown name does not sink the rest.
bool collectable(const char* chip, const std::vector<uint8_t>& avail, const char* name) {
  CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  hi.pChipName = chip;
  hi.pCounterAvailabilityImage = avail.data();
  if (cuptiProfilerHostInitialize(&hi) != CUPTI_SUCCESS) return false;
  CUpti_Profiler_Host_ConfigAddMetrics_Params add = {CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = hi.pHostObject;
  add.ppMetricNames = &name;
  add.numMetrics = 1;
  bool ok = cuptiProfilerHostConfigAddMetrics(&add) == CUPTI_SUCCESS;
  CUpti_Profiler_Host_Deinitialize_Params de = {CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  de.pHostObject = hi.pHostObject;
  cuptiProfilerHostDeinitialize(&de);
  return ok;
}

// The metrics added to the host object (the config image is built from them;
// evaluation may want them too).
CUptiResult host_add_metrics() {
  CUpti_Profiler_Host_ConfigAddMetrics_Params add = {CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = S.host;
  add.ppMetricNames = S.metrics.data();
  add.numMetrics = S.metrics.size();
  CUptiResult r = cuptiProfilerHostConfigAddMetrics(&add);
  S.hostHasConfig = r == CUPTI_SUCCESS;
  return r;
}

// Everything that needs the context: host object, config image, the range
// profiler on this context, its counter data image.
void setup(CUcontext ctx) {
  auto t = std::chrono::steady_clock::now();
  S.ctx = ctx;
  CUpti_Profiler_Initialize_Params init = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CHECK(cuptiProfilerInitialize(&init));
  cuCtxGetDevice(&S.dev);
  CUpti_Device_GetChipName_Params chip = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = (size_t)S.dev;
  CHECK(cuptiDeviceGetChipName(&chip));
  S.chip = chip.pChipName;
  // The chip and the driver name the device in `#setup`: the Rust side
  // remembers per device whether PC sampling is refused after the range
  // profiler in one process.
  cuDriverGetVersion(&S.driver);
  if (S.wantSass) setup_sass();
  // PC sampling with the context only where it is the process's one job.
  S.pcLate = S.wantPc && (S.wantRange || S.wantSass);
  if (S.wantPc && !S.pcLate && S.waitFor.empty()) setup_pc();
  if (!S.wantRange) {
    S.profiler = reinterpret_cast<CUpti_RangeProfiler_Object*>(1);  // set up; no range profiling
    fprintf(S.out, "#setup\tchip=%s\tdriver=%d\tpasses=0\tms=%.1f\n", S.chip.c_str(), S.driver, ms_since(t));
    fflush(S.out);
    return;
  }
  CUpti_Profiler_GetCounterAvailability_Params avail = {CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  avail.ctx = ctx;
  CHECK(cuptiProfilerGetCounterAvailability(&avail));
  std::vector<uint8_t> availImage(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = availImage.data();
  CHECK(cuptiProfilerGetCounterAvailability(&avail));

  // The configuration: from the cache where an earlier process built it for
  // the same chip, CUPTI, counter availability and metrics; else built here
  // (and written there).
  uint32_t version = 0;
  cuptiGetVersion(&version);
  std::string key = std::string("chip=") + S.chip + ";cupti=" + std::to_string(version) +
                    ";avail=" + kp::hex(kp::fnv1a(availImage.data(), availImage.size())) + ";metrics=" + kp::join(S.names);
  std::string path = S.cacheDir.empty() ? "" : kp::cache_path(S.cacheDir, key);
  kp::ConfigCache cached;
  bool hit = !path.empty() && kp::cache_read(path, key, cached);
  if (hit) {
    S.names = cached.metrics;
    S.metrics.clear();
    for (auto& n : S.names) S.metrics.push_back(n.c_str());
    for (auto& m : cached.skipped)
      fprintf(S.out, "#skip\t%s\tnot a range-profiler metric on %s\n", m.c_str(), S.chip.c_str());
    S.config = cached.image;
  } else {
    std::vector<const char*> ok;
    for (auto* m : S.metrics) {
      if (collectable(S.chip.c_str(), availImage, m)) {
        ok.push_back(m);
        cached.metrics.push_back(m);
      } else {
        fprintf(S.out, "#skip\t%s\tnot a range-profiler metric on %s\n", m, S.chip.c_str());
        cached.skipped.push_back(m);
      }
    }
    S.metrics = ok;
  }
  if (S.metrics.empty()) {
    fprintf(S.out, "#error\tno collectable metric\n");
    S.broken = true;
    return;
  }
  // The host object evaluates the counters after each range; a cached
  // configuration needs no metrics added to it unless evaluation says so (end()).
  CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  hi.pChipName = chip.pChipName;
  hi.pCounterAvailabilityImage = availImage.data();
  CHECK(cuptiProfilerHostInitialize(&hi));
  S.host = hi.pHostObject;
  size_t passes = cached.passes;
  if (!hit) {
    CHECK(host_add_metrics());
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
    passes = np.numOfPasses;
    cached.passes = passes;
    cached.image = S.config;
    if (!path.empty() && !kp::cache_write(path, key, cached))
      fprintf(S.out, "#warn\tconfig cache not written\t%s\n", path.c_str());
  }

  CUpti_RangeProfiler_Enable_Params en = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  en.ctx = ctx;
  CHECK(cuptiRangeProfilerEnable(&en));
  S.profiler = en.pRangeProfilerObject;
  S.rangeEnabled = true;
  CUpti_RangeProfiler_GetCounterDataSize_Params ds = {CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  ds.pRangeProfilerObject = S.profiler;
  ds.pMetricNames = S.metrics.data();
  ds.numMetrics = S.metrics.size();
  ds.maxNumOfRanges = 1;
  ds.maxNumRangeTreeNodes = 1;
  CHECK(cuptiRangeProfilerGetCounterDataSize(&ds));
  S.counterData.resize(ds.counterDataSize);
  fprintf(S.out, "#setup\tchip=%s\tdriver=%d\tpasses=%zu\tmetrics=%zu\tcached=%d\tms=%.1f\n", chip.pChipName,
          S.driver, passes, S.metrics.size(), hit ? 1 : 0, ms_since(t));
  fflush(S.out);
}

// One range over the next launch: a fresh counter data image, the config, start.
void begin() {
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
  S.running = true;
}

int attr(CUdevice_attribute a) {
  int v = 0;
  cuDeviceGetAttribute(&v, a, S.dev);
  return v;
}

// What ncu's LaunchStats and Occupancy sections and its device attributes give.
void launch_metrics() {
  metric("device__attribute_multiprocessor_count", attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  metric("device__attribute_clock_rate", attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE));
  metric("device__attribute_memory_clock_rate", attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE));
  metric("device__attribute_global_memory_bus_width", attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH));
  metric("device__attribute_compute_capability_major", attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
  metric("device__attribute_compute_capability_minor", attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  char name[256] = {0};
  cuDeviceGetName(name, sizeof name - 1, S.dev);
  fprintf(S.out, "T\t%s\t%s\tdevice__attribute_display_name\t%s\n", S.current.c_str(), S.currentMangled.c_str(), name);
  const Launch& l = S.launch;
  if (!l.known || !l.f) return;
  int regs = 0, staticShared = 0;
#if CUDA_VERSION >= 12040
  cuFuncLoad(l.f);  // lazy loading: the attributes are there once the function is loaded
#endif
  CUresult rr = cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, l.f);
  CUresult rs = cuFuncGetAttribute(&staticShared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, l.f);
  if (rr != CUDA_SUCCESS || rs != CUDA_SUCCESS) fprintf(S.out, "#warn\tcuFuncGetAttribute\t%d\t%d\n", rr, rs);
  double threadsPerBlock = double(l.block[0]) * l.block[1] * l.block[2];
  double blocks = double(l.grid[0]) * l.grid[1] * l.grid[2];
  int sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  int maxThreadsSm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  int maxBlocksSm = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  int regsSm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  int sharedSm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  int reserved = attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  int warpsPerBlock = int((threadsPerBlock + 31) / 32);
  int maxWarpsSm = maxThreadsSm / 32;
  int active = 0;
  cuOccupancyMaxActiveBlocksPerMultiprocessor(&active, l.f, int(threadsPerBlock), l.dynamicShared);
  double shared = double(staticShared) + l.dynamicShared;
  int regsPerWarp = ((regs * 32 + 255) / 256) * 256;
  int limitRegs = regs > 0 ? regsSm / (regsPerWarp * warpsPerBlock) : maxBlocksSm;
  int limitShared = shared > 0 ? int(sharedSm / (shared + reserved)) : maxBlocksSm;
  metric("launch__registers_per_thread", regs);
  metric("launch__shared_mem_per_block_static", staticShared);
  metric("launch__shared_mem_per_block_dynamic", l.dynamicShared);
  metric("launch__shared_mem_per_block", shared);
  metric("launch__block_size", threadsPerBlock);
  metric("launch__grid_size", blocks);
  metric("launch__thread_count", threadsPerBlock * blocks);
  metric("launch__sm_count", sms);
  metric("launch__occupancy_limit_blocks", maxBlocksSm);
  metric("launch__occupancy_limit_warps", warpsPerBlock ? maxWarpsSm / warpsPerBlock : 0);
  metric("launch__occupancy_limit_registers", limitRegs);
  metric("launch__occupancy_limit_shared_mem", limitShared);
  metric("launch__occupancy_limit_barriers", maxBlocksSm);
  metric("launch__occupancy_per_block_size", active);
  metric("sm__maximum_warps_per_active_cycle_pct", maxWarpsSm ? 100.0 * active * warpsPerBlock / maxWarpsSm : 0);
  metric("launch__waves_per_multiprocessor", active > 0 ? blocks / (double(active) * sms) : 0);
}

// Evaluates a range's counters. A host object set up from the cached
// configuration has no metrics added: where evaluation wants them, they are
// added and it evaluates again.
CUptiResult evaluate(CUpti_Profiler_Host_EvaluateToGpuValues_Params& ev) {
  CUptiResult r = cuptiProfilerHostEvaluateToGpuValues(&ev);
  if (r == CUPTI_SUCCESS || S.hostHasConfig) return r;
  fprintf(S.out, "#warn\tevaluation wants the metrics added to the host object\n");
  if ((r = host_add_metrics()) != CUPTI_SUCCESS) return r;
  return cuptiProfilerHostEvaluateToGpuValues(&ev);
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
  for (size_t r = 0; r < info.numTotalRanges && r < 1; r++) {
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    ev.pHostObject = S.host;
    ev.pCounterDataImage = S.counterData.data();
    ev.counterDataImageSize = S.counterData.size();
    ev.rangeIndex = r;
    ev.ppMetricNames = S.metrics.data();
    ev.numMetrics = S.metrics.size();
    ev.pMetricValues = values.data();
    CHECK(evaluate(ev));
    for (size_t m = 0; m < S.metrics.size(); m++) {
      metric(S.metrics[m], values[m]);
      if (strcmp(S.metrics[m], "gpu__time_duration.sum") == 0) S.durationNs = values[m];
    }
  }
  launch_metrics();
  fprintf(S.out, "#kernel\t%s\tranges=%zu\tdropped=%zu\tms=%.1f\n", S.current.c_str(), info.numTotalRanges,
          dd.numOfRangeDropped, ms_since(S.t0));
  fflush(S.out);
}

// The runtime (CUDA 12+) launches through context-independent CUkernel
// handles, which the driver's launch calls take in the CUfunction's place;
// attributes want the context's own CUfunction (else INVALID_HANDLE, 400).
CUfunction as_function(CUfunction f) {
  int regs = 0;
  if (!f || cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f) == CUDA_SUCCESS) return f;
  CUfunction own = nullptr;
  if (cuKernelGetFunction(&own, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS && own) {
    cuFuncLoad(own);
    return own;
  }
  return f;
}

void note_launch(CUpti_CallbackId cbid, const void* params) {
  Launch l;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) {
    auto* p = static_cast<const cuLaunchKernel_params*>(params);
    l = {p->f, {p->gridDimX, p->gridDimY, p->gridDimZ}, {p->blockDimX, p->blockDimY, p->blockDimZ}, p->sharedMemBytes,
         true};
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    auto* p = static_cast<const cuLaunchKernelEx_params*>(params);
    const CUlaunchConfig* c = p->config;
    if (c)
      l = {p->f, {c->gridDimX, c->gridDimY, c->gridDimZ}, {c->blockDimX, c->blockDimY, c->blockDimZ}, c->sharedMemBytes,
           true};
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel) {
    auto* p = static_cast<const cuLaunchCooperativeKernel_params*>(params);
    l = {p->f, {p->gridDimX, p->gridDimY, p->gridDimZ}, {p->blockDimX, p->blockDimY, p->blockDimZ}, p->sharedMemBytes,
         true};
  }
  if (l.known) {
    l.f = as_function(l.f);
    S.launch = l;
  }
}

void dump_module(const CUpti_ModuleResourceData* m) {
  if (!m || !m->pCubin || m->cubinSize == 0 || S.dir.empty()) return;
  std::string path = S.dir + "/module_" + std::to_string(S.modules++) + ".cubin";
  // Written under another name and renamed: the profiler disassembles it while the program runs.
  std::string part = path + ".part";
  FILE* f = fopen(part.c_str(), "wb");
  if (!f) return;
  bool whole = fwrite(m->pCubin, 1, m->cubinSize, f) == m->cubinSize;
  if (fclose(f) != 0 || !whole || rename(part.c_str(), path.c_str()) != 0) {
    remove(part.c_str());
    return;
  }
  fprintf(S.out, "C\t%s\n", path.c_str());
  fflush(S.out);
}

// After the one profiled kernel's last planned step (`doneFile`): the range profiler disabled,
// SASS metrics' configuration unset and the profiler deinitialized, then the file the other
// process waits for is created.
void release_when_done() {
  // One kernel's plan: a program's several kernels keep the profiler to the process's end.
  if (S.doneFile.empty() || S.released || S.onlyNames.size() != 1) return;
  if (S.launches[S.currentMangled] < (int)S.plan.size()) return;
  S.released = true;
  disable_range();
  if (!S.sassConfig.empty()) {
    CUpti_SassMetricsUnsetConfig_Params u = {CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE};
    u.deviceIndex = (uint32_t)S.dev;
    cuptiSassMetricsUnsetConfig(&u);
  }
  deinit_profiler();
  // Written under another name and renamed: the other process reads it as soon as it exists.
  const std::string tmp = S.doneFile + ".tmp";
  if (FILE* f = fopen(tmp.c_str(), "w")) {
    if (S.durationNs > 0) fprintf(f, "%.0f\n", S.durationNs);
    fclose(f);
    rename(tmp.c_str(), S.doneFile.c_str());
  }
  fprintf(S.out, "#released\n");
  fflush(S.out);
}

// PC sampling's period exponent for a kernel of `ns` (0: unknown): 2^9 cycles up to 0.5 ms, one
// more for each doubling past it, so a long kernel gives a few hundred thousand samples, not
// millions (H100, 2026-12-07: a 0.33 ms kernel gave 149K samples in 437 ms of sampling, a 16 ms
// one 7.4M in 628 ms); the stall reasons' shares per line are what the findings read.
int period_for(double ns) {
  int p = 9;
  for (double d = ns; d > 500000.0 && p < 20; d /= 2) p++;
  return p;
}

// Waits (at most KP_CUPTI_WAIT_MS, default 60 s) for `waitFor` to exist.
void wait_for_turn() {
  auto t = std::chrono::steady_clock::now();
  const char* limit = getenv("KP_CUPTI_WAIT_MS");
  double most = limit ? atof(limit) : 60000.0;
  while (access(S.waitFor.c_str(), F_OK) != 0 && ms_since(t) < most) usleep(1000);
  double ns = 0;
  if (FILE* f = fopen(S.waitFor.c_str(), "r")) {
    if (fscanf(f, "%lf", &ns) != 1) ns = 0;
    fclose(f);
  }
  S.pcPeriod = period_for(ns);
  fprintf(S.out, "#waited\tms=%.1f\tkernel_ns=%.0f\tperiod=%d\n", ms_since(t), ns, S.pcPeriod);
  fflush(S.out);
}

// The launch this driver callback is for, once more, finished before it returns (`sassWarm`).
void warm_launch(CUpti_CallbackId cbid, const void* params) {
  CUresult r = CUDA_ERROR_NOT_SUPPORTED;
  S.warming = true;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) {
    auto* p = static_cast<const cuLaunchKernel_params*>(params);
    r = cuLaunchKernel(p->f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ,
                       p->sharedMemBytes, p->hStream, p->kernelParams, p->extra);
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
             cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    auto* p = static_cast<const cuLaunchKernelEx_params*>(params);
    if (p->config) r = cuLaunchKernelEx(p->config, p->f, p->kernelParams, p->extra);
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel) {
    auto* p = static_cast<const cuLaunchCooperativeKernel_params*>(params);
    r = cuLaunchCooperativeKernel(p->f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                                  p->blockDimZ, p->sharedMemBytes, p->hStream, p->kernelParams);
  }
  if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
  S.warming = false;
  fprintf(S.out, "#warm\t%s\tresult=%d\n", S.current.c_str(), (int)r);
  fflush(S.out);
}

void CUPTIAPI callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  std::lock_guard<std::recursive_mutex> lock(S.mu);
  if (S.broken) return;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    auto* rd = static_cast<const CUpti_ResourceData*>(data);
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED && !S.profiler) {
      // A driver-API program (the GPU worker: cuDevicePrimaryCtxRetain, then
      // cuCtxSetCurrent) is told of its context before making it current;
      // the SASS metrics' config wants it current (else INVALID_CONTEXT).
      CUcontext previous = nullptr;
      bool pushed = cuCtxPushCurrent(rd->context) == CUDA_SUCCESS;
      setup(rd->context);
      if (pushed) cuCtxPopCurrent(&previous);
    }
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED)
      dump_module(static_cast<const CUpti_ModuleResourceData*>(rd->resourceDescriptor));
    return;
  }
  // Launches reach us from the runtime and, beneath it, the driver: the
  // first enter begins the range, the first exit (the driver's) ends it.
  auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (!S.profiler || S.warming) return;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) note_launch(cbid, cb->functionParams);
    std::string mangled = cb->symbolName ? cb->symbolName : "?";
    S.launch = Launch();
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) note_launch(cbid, cb->functionParams);
    if (S.sassPending) {
      if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        S.sassPending = false;
        warm_launch(cbid, cb->functionParams);
        sass_begin();
      }
      return;
    }
    if (S.running || S.sassRunning || S.pcRunning) return;
    if (!wanted(demangle(mangled))) return;
    int n = S.launches[mangled]++;
    if (n >= (int)S.plan.size()) return;
    S.current = demangle(mangled);
    S.currentMangled = mangled;
    const std::string& what = S.plan[n];
    if (what == "range" && S.wantRange && !S.rangeEnabled) {
      // PC sampling took the context for an earlier kernel: the driver
      // gives this process's plan only where one kernel is profiled.
      fprintf(S.out, "#warn\trange after pc\t%s\n", S.current.c_str());
    } else if (what == "range" && S.wantRange) {
      begin();
    } else if (what == "sass" && !S.sassConfig.empty() && S.profilerDown) {
      fprintf(S.out, "#warn\tsass after pc\t%s\n", S.current.c_str());
    } else if (what == "sass" && !S.sassConfig.empty() && S.sassWarm &&
               domain != CUPTI_CB_DOMAIN_DRIVER_API) {
      S.sassPending = true;
    } else if (what == "sass" && !S.sassConfig.empty()) {
      if (S.sassWarm) warm_launch(cbid, cb->functionParams);
      sass_begin();
    } else if (what == "pc" && !S.pcLate && !S.waitFor.empty() && S.stallNames.empty()) {
      wait_for_turn();
      setup_pc();
      if (!S.stallNames.empty() && !S.broken) pc_begin();
    } else if (what == "pc" && (S.pcLate ? pc_late() : !S.stallNames.empty())) {
      pc_begin();
    }
  } else if (S.sassPending) {
    S.sassPending = false;
    fprintf(S.out, "#warn\tsass\tno driver launch beneath the runtime's\t%s\n", S.current.c_str());
  } else if (S.running) {
    end();
    release_when_done();
  } else if (S.sassRunning) {
    sass_end();
    release_when_done();
  } else if (S.pcRunning) {
    pc_end();
  }
}

}  // namespace

extern "C" int InitializeInjection() {
  static bool once = false;
  if (once) return 1;
  once = true;
  const char* path = getenv("KP_CUPTI_OUT");
  S.out = path ? fopen(path, "a") : stderr;
  if (!S.out) S.out = stderr;
  if (const char* p = getenv("KP_CUPTI_PLAN")) S.plan = split(p);
  for (auto& w : S.plan) {
    S.wantRange = S.wantRange || w == "range";
    S.wantSass = S.wantSass || w == "sass";
    S.wantPc = S.wantPc || w == "pc";
  }
  if (const char* d = getenv("KP_CUPTI_DIR")) S.dir = d;
  if (const char* d = getenv("KP_CUPTI_CACHE")) S.cacheDir = d;
  if (const char* k = getenv("KP_CUPTI_KERNEL")) S.onlyNames = split(k);
  if (const char* l = getenv("KP_CUPTI_SASS_LAZY")) S.sassLazy = strcmp(l, "0") != 0;
  if (const char* w = getenv("KP_CUPTI_SASS_WARM")) S.sassWarm = strcmp(w, "0") != 0;
  if (const char* d = getenv("KP_CUPTI_DONE")) S.doneFile = d;
  if (const char* w = getenv("KP_CUPTI_WAIT_FOR")) S.waitFor = w;
  const char* list = getenv("KP_CUPTI_METRICS");
  S.names = split(list ? list : "gpu__time_duration.sum");
  for (auto& n : S.names) S.metrics.push_back(n.c_str());
  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, (CUpti_CallbackFunc)callback, nullptr) != CUPTI_SUCCESS) {
    fprintf(S.out, "#error\tcuptiSubscribe\n");
    fflush(S.out);
    return 0;
  }
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  for (auto id : {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                  CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel})
    cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060);
  return 1;
}

// Where the driver does not call InitializeInjection, LD_PRELOAD works too.
__attribute__((constructor)) static void kp_preload() {
  if (getenv("KP_CUPTI_PRELOAD")) InitializeInjection();
}
