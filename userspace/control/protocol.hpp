// The control socket's protocol, shared by localsad's server, its clients and the fuzz target:
// a unix stream socket (mode 0600), one JSON request line per connection, one JSON answer line.
// A request is a JSON object with a string "cmd"; an answer that is not a success holds
// "error" with a message that names what was wrong, never the request's bytes.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace localsa::control {

// A request line is at most this long, its newline included (requests are a few dozen bytes).
inline constexpr std::size_t kMaxRequestBytes = 4096;
// A client has this long to send its whole line, and then to read the answer.
inline constexpr std::chrono::seconds kRequestTimeout{5};
inline constexpr std::chrono::seconds kReplyTimeout{60}; // a dump of 1 M answers is ~300 MB
// Sessions served at once; further clients wait in the listen backlog until one ends.
inline constexpr std::size_t kMaxSessions = 16;

// A request line checked: `request` is a JSON object with a string "cmd" when `error` is empty.
struct ParsedRequest {
    nlohmann::json request;
    std::string cmd;
    std::string error;
    bool ok() const { return error.empty(); }
};

// Parses one line (its trailing "\n" or "\r\n", if any, ignored). Never throws.
ParsedRequest parse_request(std::string_view line);

// {"error": message}
nlohmann::json error_reply(std::string message);

// The answer as one line ending in "\n". Never throws: bytes that are not UTF-8 in a string
// are replaced by U+FFFD.
std::string reply_line(const nlohmann::json& reply);

// The offset of the first byte that is not part of well-formed UTF-8, or npos.
std::size_t first_invalid_utf8(std::string_view text);

} // namespace localsa::control
