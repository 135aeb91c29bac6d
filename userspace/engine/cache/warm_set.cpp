#include "engine/cache/warm_set.hpp"

#include "ib/constants.hpp"
#include "ib/path_record.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <numeric>
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

PathQueryKey WarmSet::question(const Used& u) const {
    auto k = shapes_[u.shape];
    mad::store_be64(k.masked, sa::pr_offset::kServiceId, u.service_id);
    mad::store_be64(k.masked, sa::pr_offset::kDgidInterfaceId, u.dguid);
    mad::store_be16(k.masked, sa::pr_offset::kDlid, u.dlid);
    return k;
}

void WarmSet::insert(const PathQueryKey& key, Clock::rep at) {
    auto shape = key;
    Used u{.dguid = mad::load_be64(key.masked, sa::pr_offset::kDgidInterfaceId),
           .service_id = mad::load_be64(key.masked, sa::pr_offset::kServiceId),
           .at = at,
           .dlid = mad::load_be16(key.masked, sa::pr_offset::kDlid)};
    mad::store_be64(shape.masked, sa::pr_offset::kServiceId, 0);
    mad::store_be64(shape.masked, sa::pr_offset::kDgidInterfaceId, 0);
    mad::store_be16(shape.masked, sa::pr_offset::kDlid, 0);
    // A port's Gets have few shapes (its GIDs, PKeys and masks): a scan finds one.
    const auto s = std::find(shapes_.begin(), shapes_.end(), shape);
    u.shape = static_cast<std::uint32_t>(s - shapes_.begin());
    if (s == shapes_.end())
        shapes_.push_back(shape);
    auto it = std::lower_bound(used_.begin(), used_.end(), u,
                               [](const Used& a, const Used& b) { return a.order() < b.order(); });
    if (it != used_.end() && it->order() == u.order()) {
        it->at = std::max(it->at, at);
        return;
    }
    // Trimmed in batches (a sort per use would cost the hot path), and never given room for
    // more than a batch holds.
    const auto limit = max_ + max_ / 4 + 16;
    if (used_.size() == used_.capacity()) {
        const auto at_index = it - used_.begin();
        used_.reserve(std::min(std::max<std::size_t>(16, 2 * used_.capacity()), limit + 1));
        it = used_.begin() + at_index;
    }
    used_.insert(it, u);
    if (used_.size() > limit)
        trim();
}

void WarmSet::note(const PathQueryKey& key, Clock::time_point when) {
    insert(key, when.time_since_epoch().count());
}

std::vector<std::uint32_t> WarmSet::most_recent() const {
    std::vector<std::uint32_t> rank(used_.size());
    std::iota(rank.begin(), rank.end(), 0U);
    const auto n = std::min(rank.size(), max_);
    // Ties (a restored set) keep a stable order: by key bytes.
    std::partial_sort(rank.begin(), rank.begin() + static_cast<std::ptrdiff_t>(n), rank.end(),
                      [&](std::uint32_t a, std::uint32_t b) {
                          if (used_[a].at != used_[b].at)
                              return used_[a].at > used_[b].at;
                          const auto ka = question(used_[a]), kb = question(used_[b]);
                          return std::tie(ka.comp_mask, ka.masked) <
                                 std::tie(kb.comp_mask, kb.masked);
                      });
    rank.resize(n);
    return rank;
}

void WarmSet::trim() {
    // In place: a trim every batch of uses reallocates nothing.
    std::vector<bool> kept(used_.size());
    for (const auto i : most_recent())
        kept[i] = true;
    std::vector<std::uint32_t> renumbered(shapes_.size(), UINT32_MAX);
    std::vector<PathQueryKey> shapes; // few: a new vector costs nothing
    std::size_t n = 0;
    for (std::size_t i = 0; i < used_.size(); ++i) {
        if (!kept[i])
            continue;
        auto u = used_[i];
        auto& shape = renumbered[u.shape];
        if (shape == UINT32_MAX) {
            shape = static_cast<std::uint32_t>(shapes.size());
            shapes.push_back(shapes_[u.shape]);
        }
        u.shape = shape;
        used_[n++] = u;
    }
    shapes_ = std::move(shapes);
    used_.resize(n);
    std::sort(used_.begin(), used_.end(),
              [](const Used& a, const Used& b) { return a.order() < b.order(); });
}

std::vector<PathQueryKey> WarmSet::questions() const {
    std::vector<PathQueryKey> out;
    for (const auto i : most_recent())
        out.push_back(question(used_[i]));
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
    std::vector<PathQueryKey> read; // most recent first
    std::size_t ports = 0;
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
                read.push_back(k);
                return true;
            }
        }
        error = "line " + std::to_string(n) + " is not a warm-set entry";
        return false;
    });
    if (!ok)
        return false;
    shapes_.clear();
    used_.clear();
    // Earlier lines get the later (made-up) times, so the order survives; a line repeated
    // keeps its first place.
    auto rank = (Clock::time_point{} + std::chrono::hours{24}).time_since_epoch().count();
    for (const auto& k : read) {
        insert(k, rank);
        rank -= std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds{1}).count();
    }
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
    shapes_.clear();
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
