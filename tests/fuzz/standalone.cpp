// A deterministic stand-in for libFuzzer where clang is absent (tools/fuzz.sh
// builds it with g++ and ASan/UBSan): a seeded mutator over the seed corpus.
//
//   fuzz_config_standalone RUNS SEED_FILE...
//
// Each run takes a seed file, applies 1 to 8 random mutations (bit flips,
// bytes and tokens inserted, ranges deleted, duplicated or spliced from
// another seed) and calls LLVMFuzzerTestOneInput. The generator is seeded
// with a constant, so a failure is reproducible by its run number.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::uint64_t g_state = 0x9E3779B97F4A7C15ull;
std::uint64_t next() {
    g_state ^= g_state << 13;
    g_state ^= g_state >> 7;
    g_state ^= g_state << 17;
    return g_state;
}
std::size_t below(std::size_t n) {
    return n == 0 ? 0 : static_cast<std::size_t>(next() % n);
}

const char* const kTokens[] = {
    "[global]",
    "[program ",
    "]",
    "[",
    " = ",
    "=",
    "#",
    " #",
    "\n",
    "\r\n",
    "\t",
    "*",
    "?",
    "[!a-z]",
    "\\",
    "mode",
    "spin_us",
    "probe",
    "log_file",
    "stats",
    "reload_ms",
    "ab_seed",
    "off",
    "fixed",
    "adaptive",
    "on",
    "4294967295",
    "99999999999999999999",
    "-1",
    "0",
    "PIPESPIN_",
    "\xEF\xBB\xBF",
    "" /* a NUL byte */,
    "\x7f",
    "\xff",
};

void mutate(std::string& s, const std::vector<std::string>& seeds) {
    const int n = 1 + static_cast<int>(below(8));
    for (int i = 0; i < n; ++i) {
        switch (below(7)) {
            case 0:  // flip a bit
                if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1u << below(8));
                break;
            case 1:  // a random byte
                s.insert(s.begin() + static_cast<long>(below(s.size() + 1)),
                         static_cast<char>(next()));
                break;
            case 2: {  // a token
                const char* tok = kTokens[below(std::size(kTokens))];
                std::string t = tok[0] ? tok : std::string(1, '\0');
                s.insert(below(s.size() + 1), t);
                break;
            }
            case 3:  // delete a range
                if (!s.empty()) {
                    std::size_t at = below(s.size());
                    s.erase(at, below(s.size() - at) + 1);
                }
                break;
            case 4:  // duplicate a range
                if (!s.empty() && s.size() < 60000) {
                    std::size_t at = below(s.size());
                    std::string part = s.substr(at, below(256) + 1);
                    s.insert(below(s.size() + 1), part);
                }
                break;
            case 5: {  // splice from another seed
                const std::string& o = seeds[below(seeds.size())];
                if (!o.empty()) {
                    std::size_t at = below(o.size());
                    s.insert(below(s.size() + 1), o.substr(at, below(512) + 1));
                }
                break;
            }
            case 6:  // a long line
                s.insert(below(s.size() + 1),
                         std::string(below(2000), static_cast<char>('a' + below(26))));
                break;
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s RUNS SEED_FILE...\n", argv[0]);
        return 2;
    }
    const unsigned long long runs = std::strtoull(argv[1], nullptr, 10);
    std::vector<std::string> seeds;
    for (int i = 2; i < argc; ++i) {
        std::ifstream f(argv[i], std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        seeds.push_back(ss.str());
    }
    for (unsigned long long r = 0; r < runs; ++r) {
        std::string s = seeds[below(seeds.size())];
        mutate(s, seeds);
        if (s.size() > 65536) s.resize(65536);
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
        if ((r + 1) % 100000 == 0) std::fprintf(stderr, "standalone: %llu runs\n", r + 1);
    }
    std::printf("standalone: %llu runs, no crash\n", runs);
    return 0;
}
