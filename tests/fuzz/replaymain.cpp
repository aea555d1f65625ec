// SPDX-License-Identifier: GPL-2.0-or-later
// Runs a fuzz target's LLVMFuzzerTestOneInput on files, without libFuzzer:
// the ctest tests fuzz/<target> replay the seed corpus and every input that
// once crashed (tests/fuzz/corpus/<target>/) on each `make test`, in every
// build (under ASan and UBSan in build-asan). Arguments: files or
// directories (every regular file in them, in name order). Exits 1 when a
// path cannot be read or holds no input at all; a crash is the target's
// abort() or a sanitizer's report.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char **argv)
{
    std::vector<fs::path> files;
    for (int i = 1; i < argc; ++i) {
        std::error_code ec;
        const fs::path p(argv[i]);
        if (fs::is_directory(p, ec)) {
            for (const auto &e : fs::directory_iterator(p, ec))
                if (e.is_regular_file())
                    files.push_back(e.path());
        } else if (fs::is_regular_file(p, ec)) {
            files.push_back(p);
        } else {
            std::fprintf(stderr, "%s: cannot read\n", argv[i]);
            return 1;
        }
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) {
        std::fprintf(stderr, "no input files\n");
        return 1;
    }
    for (const fs::path &f : files) {
        std::ifstream in(f, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (!in.good() && !in.eof()) {
            std::fprintf(stderr, "%s: cannot read\n", f.c_str());
            return 1;
        }
        std::printf("%s (%zu bytes)\n", f.filename().c_str(), bytes.size());
        std::fflush(stdout);
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
    }
    std::printf("%zu inputs replayed\n", files.size());
    return 0;
}
