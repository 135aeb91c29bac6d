#include "engine/cache/warm_set.hpp"

#include "ib/constants.hpp"
#include "ib/path_record.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <system_error>

namespace localsa::cache {

namespace {

constexpr std::string_view kMagic = "localsa-warm 1";

std::string hex(const std::uint8_t* p, std::size_t n) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s;
    s.reserve(n * 2);
    for (std::size_t i = 0; i < n; ++i) {
        s += digits[p[i] >> 4];
        s += digits[p[i] & 0xf];
    }
    return s;
}

int nibble(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

template <class T> std::optional<T> number(std::string_view s) {
    int base = 10;
    if (s.starts_with("0x") || s.starts_with("0X")) {
        s.remove_prefix(2);
        base = 16;
    }
    T v{};
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc{} || end != s.data() + s.size() || s.empty())
        return std::nullopt;
    return v;
}

std::vector<std::string_view> words(std::string_view line) {
    std::vector<std::string_view> w;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
            ++i;
        const auto b = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            ++i;
        if (i > b)
            w.push_back(line.substr(b, i - b));
    }
    return w;
}

// Calls fn(line number, line) for each line without its comment; stops when fn returns false.
template <class Fn> bool for_lines(std::string_view text, Fn fn) {
    std::size_t n = 0;
    while (!text.empty()) {
        ++n;
        const auto eol = text.find('\n');
        auto line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
        if (const auto hash = line.find('#'); hash != std::string_view::npos)
            line = line.substr(0, hash);
        if (!fn(n, line))
            return false;
    }
    return true;
}

} // namespace

void WarmSet::note(const PathQueryKey& key, Clock::time_point when) {
    auto [it, fresh] = used_.try_emplace(key, when);
    if (!fresh)
        it->second = std::max(it->second, when);
    // Trimmed in batches: a sort per use would cost the hot path.
    if (used_.size() > 2 * max_ + 64) {
        const auto keep = questions();
        std::unordered_map<PathQueryKey, Clock::time_point, PathQueryKeyHash> kept;
        for (const auto& k : keep)
            kept.emplace(k, used_.at(k));
        used_ = std::move(kept);
    }
}

std::vector<PathQueryKey> WarmSet::questions() const {
    std::vector<std::pair<Clock::time_point, const PathQueryKey*>> order;
    order.reserve(used_.size());
    for (const auto& [k, t] : used_)
        order.emplace_back(t, &k);
    const auto n = std::min(order.size(), max_);
    // Ties (a restored set) keep a stable order: by key bytes.
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                      [](const auto& a, const auto& b) {
                          if (a.first != b.first)
                              return a.first > b.first;
                          return std::tie(a.second->comp_mask, a.second->masked) <
                                 std::tie(b.second->comp_mask, b.second->masked);
                      });
    std::vector<PathQueryKey> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
        out.push_back(*order[i].second);
    return out;
}

std::string WarmSet::to_text() const {
    std::string s{kMagic};
    s += "\nports " + std::to_string(fabric_ports) + "\n";
    for (const auto& k : questions()) {
        std::uint8_t mask[8];
        for (int i = 0; i < 8; ++i)
            mask[i] = static_cast<std::uint8_t>(k.comp_mask >> (56 - 8 * i));
        s += hex(mask, 8) + ' ' + hex(k.masked.data(), k.masked.size()) + '\n';
    }
    return s;
}

bool WarmSet::from_text(std::string_view text, std::string& error) {
    if (!text.starts_with(kMagic)) {
        error = "not a localsa warm set (first line is not '" + std::string(kMagic) + "')";
        return false;
    }
    std::unordered_map<PathQueryKey, Clock::time_point, PathQueryKeyHash> read;
    std::size_t ports = 0;
    // Most recent first: earlier lines get the later (made-up) times, so the order survives.
    auto rank = Clock::time_point{} + std::chrono::hours{24};
    const bool ok = for_lines(text, [&](std::size_t n, std::string_view line) {
        const auto w = words(line);
        if (n == 1 || w.empty())
            return true;
        if (w.size() == 2 && w[0] == "ports") {
            if (const auto v = number<std::size_t>(w[1])) {
                ports = *v;
                return true;
            }
        } else if (w.size() == 2 && w[0].size() == 16 && w[1].size() == 2 * sa::PathRecord::kSize) {
            PathQueryKey k;
            k.method = mad::method::kGet;
            bool good = true;
            for (char c : w[0]) {
                const auto d = nibble(c);
                good &= d >= 0;
                k.comp_mask = k.comp_mask << 4 | static_cast<std::uint64_t>(d < 0 ? 0 : d);
            }
            for (std::size_t i = 0; good && i < k.masked.size(); ++i) {
                const auto hi = nibble(w[1][2 * i]), lo = nibble(w[1][2 * i + 1]);
                good = hi >= 0 && lo >= 0;
                k.masked[i] = static_cast<std::uint8_t>(hi << 4 | lo);
            }
            // A record as asked: only the fields its mask names may be set.
            if (good && sa::masked_path_record(k.masked, k.comp_mask) == k.masked) {
                read.try_emplace(k, rank);
                rank -= std::chrono::milliseconds{1};
                return true;
            }
        }
        error = "line " + std::to_string(n) + " is not a warm-set entry";
        return false;
    });
    if (!ok)
        return false;
    used_ = std::move(read);
    fabric_ports = ports;
    return true;
}

bool WarmSet::save(const std::filesystem::path& file, std::string& error) const {
    auto tmp = file;
    tmp += ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << to_text();
        out.flush();
        if (!out) {
            error = "cannot write " + tmp.string();
            return false;
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, file, ec);
    if (ec) {
        error = "cannot rename " + tmp.string() + " to " + file.string() + ": " + ec.message();
        std::filesystem::remove(tmp, ec);
        return false;
    }
    return true;
}

bool WarmSet::load(const std::filesystem::path& file, std::string& error) {
    used_.clear();
    fabric_ports = 0;
    error.clear();
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
        if (ec)
            error = "cannot read " + file.string() + ": " + ec.message();
        return !ec;
    }
    std::ifstream in(file);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
        error = "cannot read " + file.string();
        return false;
    }
    if (!from_text(text.str(), error)) {
        error = file.string() + ": " + error;
        return false;
    }
    return true;
}

PathQueryKey Destination::question(const sa::Gid& own) const {
    sa::PathRecord r;
    r.sgid = own;
    std::uint64_t mask = sa::pr_mask::kSgid;
    if (gid) {
        r.dgid = *gid;
        mask |= sa::pr_mask::kDgid;
    } else {
        r.dlid = lid;
        mask |= sa::pr_mask::kDlid;
    }
    if (pkey) {
        r.pkey = *pkey;
        mask |= sa::pr_mask::kPKey;
    }
    return PathQueryKey::from_request(mad::method::kGet, mask, r.bytes());
}

std::optional<std::vector<Destination>> parse_destinations(std::string_view text,
                                                           std::string& error) {
    std::vector<Destination> out;
    const bool ok = for_lines(text, [&](std::size_t n, std::string_view line) {
        const auto w = words(line);
        if (w.empty())
            return true;
        Destination d;
        bool good = w.size() <= 2;
        if (good && w[0].find(':') != std::string_view::npos) {
            d.gid = sa::Gid::parse(w[0]);
            good = d.gid.has_value();
        } else if (good) {
            const auto lid = number<std::uint16_t>(w[0]);
            good = lid && *lid != 0 && *lid < 0xc000; // unicast LIDs only
            d.lid = lid.value_or(0);
        }
        if (good && w.size() == 2) {
            d.pkey = number<std::uint16_t>(w[1]);
            good = d.pkey && (*d.pkey & 0x7fff) != 0;
        }
        if (!good) {
            error = "line " + std::to_string(n) + ": '" + std::string(line) +
                    "' is not 'GID [PKEY]' or 'LID [PKEY]'";
            return false;
        }
        out.push_back(d);
        return true;
    });
    if (!ok)
        return std::nullopt;
    return out;
}

} // namespace localsa::cache
