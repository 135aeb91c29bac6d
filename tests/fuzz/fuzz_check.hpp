// A failed property in a fuzz target: print where and abort, so libFuzzer saves the input as a
// crash artifact (assert() would vanish under NDEBUG).
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__, #cond);  \
            std::abort();                                                                          \
        }                                                                                          \
    } while (0)
