#include "daemon/kernel_redirect.hpp"

#include <charconv>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace localsa {

namespace {

constexpr std::string_view kHeader = "port target state redirected fallen_back probed";

std::vector<std::string_view> words(std::string_view line) {
    std::vector<std::string_view> out;
    while (!line.empty()) {
        const auto start = line.find_first_not_of(" \t");
        if (start == std::string_view::npos)
            break;
        line.remove_prefix(start);
        const auto end = line.find_first_of(" \t");
        out.push_back(line.substr(0, end));
        line.remove_prefix(end == std::string_view::npos ? line.size() : end);
    }
    return out;
}

template <typename T> bool number(std::string_view s, T& out, int base = 10) {
    if (base == 16) {
        if (!s.starts_with("0x"))
            return false;
        s.remove_prefix(2);
    }
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
    return ec == std::errc{} && end == s.data() + s.size() && !s.empty();
}

} // namespace

nlohmann::json KernelRedirect::to_json() const {
    return {{"target", target},
            {"state", state},
            {"redirected", redirected},
            {"fallen_back", fallen_back},
            {"probed", probed}};
}

std::optional<KernelRedirect> parse_kernel_redirect(std::string_view text, unsigned port) {
    bool header = false;
    while (!text.empty()) {
        const auto nl = text.find('\n');
        const auto line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        if (!header) {
            if (words(line) != words(kHeader))
                return std::nullopt;
            header = true;
            continue;
        }
        const auto w = words(line);
        KernelRedirect r;
        if (w.size() != 6 || !number(w[0], r.port) || r.port != port)
            continue;
        if (!number(w[1], r.target, 16) || !number(w[3], r.redirected) ||
            !number(w[4], r.fallen_back) || !number(w[5], r.probed))
            return std::nullopt;
        r.state = std::string(w[2]);
        return r;
    }
    return std::nullopt;
}

std::string kernel_redirect_path(const std::string& ca) {
    return "/sys/kernel/debug/ib_sa/" + ca + "/redirect";
}

KernelRedirectFile::KernelRedirectFile(std::string path, unsigned port)
    : path_(std::move(path)), port_(port), fd_(::open(path_.c_str(), O_RDONLY | O_CLOEXEC)) {}

KernelRedirectFile::~KernelRedirectFile() {
    if (fd_ >= 0)
        ::close(fd_);
}

std::optional<KernelRedirect> KernelRedirectFile::read() {
    if (fd_ < 0) // not there at start (module loaded later, or root's only): try again
        fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0)
        return std::nullopt;
    // A seq_file: each read from the start shows the state now.
    std::string text;
    char buf[4096];
    for (bool rewound = ::lseek(fd_, 0, SEEK_SET) == 0;;) {
        const auto n = rewound ? ::read(fd_, buf, sizeof buf) : -1;
        if (n < 0) {
            // The device went away (its debugfs directory with it): open again next time.
            ::close(fd_);
            fd_ = -1;
            return std::nullopt;
        }
        if (n == 0)
            break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > (1u << 20))
            return std::nullopt;
    }
    return parse_kernel_redirect(text, port_);
}

} // namespace localsa
