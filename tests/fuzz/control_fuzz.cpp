// libFuzzer target: the control socket's request parser and answer writer on lines of any bytes
// and length. Beyond "no crash, no exception, no sanitizer report" it checks the protocol's
// contract: a line is a request (a JSON object with a string cmd) or gets an error that is
// valid UTF-8 and quotes none of the line's bytes outside printable ASCII; every answer,
// whatever strings it holds, is one line of JSON that parses back.
#include "fuzz_check.hpp"

#include "control/protocol.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

using namespace localsa::control;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string line(reinterpret_cast<const char*>(data), size);
    ParsedRequest parsed;
    try {
        parsed = parse_request(line);
    } catch (...) {
        FUZZ_CHECK(!"parse_request threw");
    }
    if (parsed.ok()) {
        FUZZ_CHECK(parsed.request.is_object());
        FUZZ_CHECK(parsed.request.at("cmd").get<std::string>() == parsed.cmd);
        FUZZ_CHECK(line.size() < kMaxRequestBytes + 2); // at most the line and "\r\n"
    } else {
        FUZZ_CHECK(first_invalid_utf8(parsed.error) == std::string_view::npos);
        for (const unsigned char c : parsed.error)
            FUZZ_CHECK(c >= 0x20 && c < 0x7f); // messages are ours, in ASCII
    }
    // Answers: an error, an echo of what was asked, and the raw line as a string value (a
    // handler's answer may hold any bytes).
    for (const auto& reply :
         {error_reply(parsed.error), parsed.ok() ? parsed.request : nlohmann::json{},
          nlohmann::json{{"text", line}}}) {
        std::string out;
        try {
            out = reply_line(reply);
        } catch (...) {
            FUZZ_CHECK(!"reply_line threw");
        }
        FUZZ_CHECK(!out.empty() && out.back() == '\n');
        FUZZ_CHECK(out.find('\n') == out.size() - 1);
        FUZZ_CHECK(first_invalid_utf8(out) == std::string_view::npos);
        FUZZ_CHECK(!nlohmann::json::parse(out, nullptr, false).is_discarded());
    }
    return 0;
}
