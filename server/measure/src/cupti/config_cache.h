// The range profiler's configuration, kept on disk between profiles (issue
// 33): which of the asked metrics this chip collects, the config image CUPTI's
// host API builds for them and its pass count. Building it costs about half a
// second a process (a host object per metric to test it, then the scheduling
// into passes); it depends only on the key (chip, CUPTI version, counter
// availability, metric list), so a later process reads it back. No CUPTI
// here: kernelpro-measure's tests build this file alone with the real nvcc.
// A file that is absent, of another key, truncated or corrupt is a miss: the
// caller builds the configuration again and writes it over.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace kp {

struct ConfigCache {
  std::vector<std::string> metrics;  // the collectable ones, in the asked order
  std::vector<std::string> skipped;  // the asked ones this chip does not collect
  size_t passes = 0;
  std::vector<uint8_t> image;
};

inline uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

inline std::string hex(uint64_t v) {
  char b[17];
  snprintf(b, sizeof b, "%016llx", (unsigned long long)v);
  return b;
}

inline std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

inline std::vector<std::string> split_commas(const std::string& all) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos <= all.size();) {
    size_t c = all.find(',', pos);
    if (c == std::string::npos) c = all.size();
    if (c > pos) out.push_back(all.substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

// The file of a key under `dir`, named by the key's hash (the key itself is
// stored inside and compared in full).
inline std::string cache_path(const std::string& dir, const std::string& key) {
  return dir + "/range-" + hex(fnv1a(key.data(), key.size())) + ".cfg";
}

inline bool read_line(FILE* f, std::string& line) {
  line.clear();
  for (int c; (c = fgetc(f)) != EOF;) {
    if (c == '\n') return true;
    line.push_back(char(c));
    if (line.size() > (1u << 20)) return false;
  }
  return false;
}

// Reads the configuration of `key` from `path`; false (and `out` untouched)
// on any mismatch.
inline bool cache_read(const std::string& path, const std::string& key, ConfigCache& out) {
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) return false;
  ConfigCache c;
  std::string line;
  bool ok = read_line(f, line) && line == "kp-cupti-config 1" && read_line(f, line) && line == "key " + key;
  ok = ok && read_line(f, line) && line.rfind("metrics ", 0) == 0;
  if (ok) c.metrics = split_commas(line.substr(8));
  ok = ok && read_line(f, line) && line.rfind("skipped", 0) == 0;
  if (ok) c.skipped = split_commas(line.size() > 8 ? line.substr(8) : "");
  unsigned long long passes = 0, size = 0, sum = 0;
  ok = ok && read_line(f, line) && sscanf(line.c_str(), "passes %llu", &passes) == 1;
  ok = ok && read_line(f, line) && sscanf(line.c_str(), "image %llu %llx", &size, &sum) == 2;
  ok = ok && !c.metrics.empty() && size > 0 && size < (1ull << 30);
  if (ok) {
    c.image.resize(size);
    ok = fread(c.image.data(), 1, size, f) == size && fgetc(f) == EOF &&
         fnv1a(c.image.data(), c.image.size()) == sum;
  }
  fclose(f);
  if (!ok) return false;
  c.passes = passes;
  out = std::move(c);
  return true;
}

// Writes the configuration of `key` to `path` whole or not at all (a
// temporary file renamed over it), so a concurrent reader never sees half.
inline bool cache_write(const std::string& path, const std::string& key, const ConfigCache& c) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = fopen(tmp.c_str(), "wb");
  if (!f) return false;
  std::string head = "kp-cupti-config 1\nkey " + key + "\nmetrics " + join(c.metrics) + "\nskipped " +
                     join(c.skipped) + "\npasses " + std::to_string(c.passes) + "\nimage " +
                     std::to_string(c.image.size()) + " " + hex(fnv1a(c.image.data(), c.image.size())) + "\n";
  bool ok = fwrite(head.data(), 1, head.size(), f) == head.size() &&
            fwrite(c.image.data(), 1, c.image.size(), f) == c.image.size();
  ok = fclose(f) == 0 && ok;
  if (ok) ok = rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) remove(tmp.c_str());
  return ok;
}

}  // namespace kp
