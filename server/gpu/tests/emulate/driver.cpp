// Runs device.cu's kernels on the host, one block of 256 threads, for
// tests/emulate.rs. Commands on stdin, one per line, results on stdout:
//   fill ELEM N MODE STREAM LO HI ILO IHI PATTERN -> the buffer as hex
//   checksum ELEM N HEX                           -> sum abs_sum unwritten hash
//   compare ELEM N RTOL ATOL WANTHEX GOTHEX        -> bad differing one_nan worst max_abs_diff max_abs
#include "shim.h"
#include "../../src/device.cu"
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

template <class F> void one_block(F f) {
    std::barrier<> barrier(BLOCK);
    block_barrier = &barrier;
    blockDim.x = BLOCK;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < BLOCK; t++) threads.emplace_back([&, t] { threadIdx.x = t; f(); });
    for (auto& t : threads) t.join();
}

static std::vector<unsigned char> unhex(const std::string& s) {
    std::vector<unsigned char> out(s.size() / 2);
    for (size_t i = 0; i < out.size(); i++) out[i] = (unsigned char)std::stoul(s.substr(2 * i, 2), nullptr, 16);
    return out;
}

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string cmd;
        int elem;
        u64 n;
        in >> cmd >> elem >> n;
        if (cmd == "fill") {
            int mode; u64 seed, pattern; double lo, hi; i64 ilo, ihi;
            in >> mode >> seed >> lo >> hi >> ilo >> ihi >> pattern;
            std::vector<unsigned char> buf(n * elem_size(elem) + 1);
            one_block([&] { kp_fill(buf.data(), n, elem, mode, seed, lo, hi, ilo, ihi, pattern); });
            for (u64 i = 0; i < n * elem_size(elem); i++) printf("%02x", buf[i]);
            printf("\n");
        } else if (cmd == "checksum") {
            std::string hex; in >> hex;
            auto buf = unhex(hex);
            Sums s;
            one_block([&] { kp_checksum(buf.data(), n, elem, &s); });
            printf("%.17g %.17g %llu %016llx\n", s.sum, s.abs_sum, s.unwritten, s.hash);
        } else {
            double rtol, atol; std::string w, g; in >> rtol >> atol >> w >> g;
            auto want = unhex(w), got = unhex(g);
            Pair p;
            one_block([&] { kp_compare(want.data(), got.data(), n, elem, rtol, atol, &p); });
            printf("%llu %llu %llu %lld %.17g %.17g\n", p.bad, p.differing, p.one_nan, p.worst_index == ~0ULL ? -1LL : (long long)p.worst_index, p.max_abs_diff, p.max_abs);
        }
        fflush(stdout);
    }
}
