// The patched kernel's sa_redirect state and counters of this port, as its debugfs file
// ib_sa/DEV/redirect shows them (docs/kernel.md, "Checking that it works"):
//   port target state redirected fallen_back probed
//   1 0x12 redirect 48211 0 0
// exported with the daemon's stats when the file is readable (a stock kernel has none; debugfs is
// root's: the file is opened before privileges drop and read again through that descriptor).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace localsa {

struct KernelRedirect {
    unsigned port = 0;
    std::uint16_t target = 0; // the LID the kernel's SA queries go to; 0: not redirected
    std::string state;        // off, redirect, no-agent or fallback
    std::uint64_t redirected = 0;
    std::uint64_t fallen_back = 0;
    std::uint64_t probed = 0;

    nlohmann::json to_json() const;
};

// The line of `port` in the file's text; nullopt when the text is not that file's format or has
// no line for the port.
std::optional<KernelRedirect> parse_kernel_redirect(std::string_view text, unsigned port);

// /sys/kernel/debug/ib_sa/CA/redirect
std::string kernel_redirect_path(const std::string& ca);

// Holds the file open (from before privileges drop); read() reads it again each time.
class KernelRedirectFile {
public:
    KernelRedirectFile(std::string path, unsigned port);
    ~KernelRedirectFile();
    KernelRedirectFile(const KernelRedirectFile&) = delete;
    KernelRedirectFile& operator=(const KernelRedirectFile&) = delete;

    // The port's line now; nullopt when the file is absent, unreadable or has no such line.
    std::optional<KernelRedirect> read();

private:
    std::string path_;
    unsigned port_;
    int fd_ = -1;
};

} // namespace localsa
