// The path flags localsad puts on the records of a netlink RESOLVE reply against the kernel's
// own acceptance code: the switch of ib_nl_process_good_resolve_rsp (sa_query.c of the Debian
// line, taken out of the unpacked source at build time) that picks the mask a record's flags
// must cover, and its test `(flags & mask) != mask`.
#include "transport/netlink/ls_message.hpp"

#include <cstdint>
#include <cstdio>
#include <rdma/ib_user_sa.h>
#include <rdma/rdma_netlink.h>

namespace {

using u8 = std::uint8_t;
using u32 = std::uint32_t;

// The kernel's switch, as it is in sa_query.c.
u32 kernel_mask(u8 path_use) {
    struct {
        u8 path_use;
    } q{path_use}, *query = &q;
    u32 mask = 0;
#include "kernel_path_use_switch.inc"
    return mask;
}

// The kernel's own test, taken out of the same function.
bool kernel_takes(u32 flags, u32 mask) {
#include "kernel_path_use_test.inc"
}

int failures = 0;

void check(bool ok, const char* what, int use, u32 flags) {
    if (ok)
        return;
    ++failures;
    std::printf("FAIL %s: path_use %d flags 0x%x\n", what, use, flags);
}

} // namespace

int main() {
    namespace nl = localsa::netlink;
    const nl::PathUse uses[] = {nl::PathUse::All, nl::PathUse::Unidirectional, nl::PathUse::Gmp};
    static_assert(static_cast<int>(nl::PathUse::All) == LS_RESOLVE_PATH_USE_ALL);
    static_assert(static_cast<int>(nl::PathUse::Gmp) == LS_RESOLVE_PATH_USE_GMP);
    for (const auto use : uses) {
        const auto u = static_cast<u8>(use);
        const u32 mask = kernel_mask(u);
        // localsad's model of the mask, over every combination of the flags
        for (u32 flags = 0; flags < 64; ++flags)
            check(nl::kernel_accepts(use, flags) == kernel_takes(flags, mask),
                  "kernel_accepts differs from the kernel", u, flags);
        // The flags localsad gives a record: taken whenever its model says so, and a
        // reversible record (the master's answer to a reversible Get) always taken.
        for (const bool reversible : {true, false}) {
            const auto flags = nl::path_flags(use, reversible);
            check(nl::kernel_accepts(use, flags) == kernel_takes(flags, mask),
                  "localsad's own flags judged otherwise than by the kernel", u, flags);
            if (reversible)
                check(kernel_takes(flags, mask), "a reversible record refused", u, flags);
        }
    }
    std::printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
