#include "control/protocol.hpp"

namespace localsa::control {

std::size_t first_invalid_utf8(std::string_view text) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    std::size_t i = 0;
    while (i < n) {
        const unsigned c = s[i];
        std::size_t len = 0;
        unsigned lo = 0x80, hi = 0xBF; // allowed range of the second byte (RFC 3629)
        if (c < 0x80) {
            ++i;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF; // no surrogates
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        } else
            return i;
        if (i + len > n || s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (std::size_t k = 2; k < len; ++k)
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        i += len;
    }
    return std::string_view::npos;
}

ParsedRequest parse_request(std::string_view line) {
    ParsedRequest out;
    if (line.ends_with('\n'))
        line.remove_suffix(1);
    if (line.ends_with('\r'))
        line.remove_suffix(1);
    if (line.size() >= kMaxRequestBytes) {
        out.error = "bad request: longer than " + std::to_string(kMaxRequestBytes - 1) + " bytes";
        return out;
    }
    if (const auto bad = first_invalid_utf8(line); bad != std::string_view::npos) {
        out.error = "bad request: not UTF-8 (byte " + std::to_string(bad) + ")";
        return out;
    }
    // The parser's own messages quote the input; only its position is passed on.
    try {
        out.request = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
        out.error = "bad request: not JSON (error at byte " + std::to_string(e.byte) + ")";
        return out;
    } catch (const std::exception&) {
        out.error = "bad request: not JSON";
        return out;
    }
    if (!out.request.is_object()) {
        out.error = "bad request: not a JSON object";
        return out;
    }
    const auto cmd = out.request.find("cmd");
    if (cmd == out.request.end() || !cmd->is_string()) {
        out.error = "bad request: no \"cmd\" string (stats, dump or flush)";
        return out;
    }
    out.cmd = cmd->get<std::string>();
    return out;
}

nlohmann::json error_reply(std::string message) {
    return nlohmann::json{{"error", std::move(message)}};
}

std::string reply_line(const nlohmann::json& reply) {
    return reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace localsa::control
