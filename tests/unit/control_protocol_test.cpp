// The control socket: request parsing (control/protocol.hpp) and the server (daemon/
// control_server.cpp) over a real unix socket: any bytes get a JSON error answer, never an exit.
#include "control/protocol.hpp"
#include "daemon/control_server.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <future>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace localsa::control;

namespace {

bool is_utf8(const std::string& s) {
    return first_invalid_utf8(s) == std::string::npos;
}

// Connects to `path`, sends `bytes` (and shuts its writing side when `finish`), reads until the
// server closes; returns what came back.
std::string talk(const std::string& path, const std::string& bytes, bool finish = true) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof addr.sun_path - 1);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        const auto n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0)
            break; // the server may close on an overlong line before reading it all
        sent += static_cast<std::size_t>(n);
    }
    if (finish)
        ::shutdown(fd, SHUT_WR);
    std::string answer;
    char buf[4096];
    for (;;) {
        const auto n = ::read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        answer.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return answer;
}

struct Server {
    boost::asio::io_context io;
    std::string path;
    std::unique_ptr<ControlServer> server;
    std::thread runner;
    std::exception_ptr failure;
    int calls = 0;

    Server() {
        char dir[] = "/tmp/localsa-control-XXXXXX";
        REQUIRE(::mkdtemp(dir));
        path = std::string(dir) + "/ctl.sock";
        server = std::make_unique<ControlServer>(io, path, [this](const nlohmann::json& req) {
            ++calls;
            const auto cmd = req.value("cmd", "");
            if (cmd == "echo-bytes") // a handler answering with bytes that are not UTF-8
                return nlohmann::json{{"text", std::string("\xff\xfe", 2)}};
            return nlohmann::json{{"ok", cmd}};
        });
        runner = std::thread([this] {
            try {
                io.run();
            } catch (...) {
                failure = std::current_exception();
            }
        });
    }
    ~Server() {
        io.stop();
        runner.join();
        server.reset();
        ::rmdir(path.substr(0, path.rfind('/')).c_str());
    }
    bool alive() const { return !failure && !io.stopped(); }
};

} // namespace

TEST_CASE("control protocol: a request is a JSON object with a string cmd", "[control]") {
    const auto good = parse_request("{\"cmd\":\"stats\"}\n");
    CHECK(good.ok());
    CHECK(good.cmd == "stats");
    CHECK(parse_request("{\"cmd\":\"dump\"}\r\n").cmd == "dump");

    const auto not_object = parse_request("[1,2]");
    CHECK_THAT(not_object.error, Catch::Contains("not a JSON object"));
    CHECK_THAT(parse_request("{\"cmd\":7}").error, Catch::Contains("no \"cmd\" string"));
    CHECK_THAT(parse_request("{}").error, Catch::Contains("no \"cmd\" string"));
    CHECK_THAT(parse_request("").error, Catch::Contains("not JSON"));
    CHECK_THAT(parse_request("{\"cmd\":").error, Catch::Contains("not JSON (error at byte"));
    CHECK_THAT(parse_request(std::string(kMaxRequestBytes, ' ')).error,
               Catch::Contains("longer than 4095 bytes"));
}

TEST_CASE("control protocol: bytes that are not UTF-8 are named by offset, never echoed",
          "[control]") {
    for (const std::string& line :
         {std::string("\xff\xfe{"), std::string("{\"cmd\":\"\xc0\xaf\"}"),
          std::string("{\"cmd\":\"\xed\xa0\x80\"}"), std::string("{\"cmd\":\"st\xe2\x82\"}"),
          std::string("\x00\x01\x02", 3)}) {
        const auto parsed = parse_request(line);
        CAPTURE(line);
        CHECK_FALSE(parsed.ok());
        CHECK(is_utf8(parsed.error));
        CHECK(parsed.error.find_first_of("\xff\xfe\xc0\xed\xe2") == std::string::npos);
        CHECK_NOTHROW(reply_line(error_reply(parsed.error)));
    }
    CHECK_THAT(parse_request("\xff\xfe{").error, Catch::Equals("bad request: not UTF-8 (byte 0)"));
    CHECK(first_invalid_utf8("h\xc3\xa9llo \xf0\x9f\x98\x80") == std::string::npos);
    CHECK(first_invalid_utf8("ab\xf5") == 2);
}

TEST_CASE("control protocol: an answer holding bytes that are not UTF-8 is still one JSON line",
          "[control]") {
    const auto line = reply_line({{"text", std::string("a\xff", 2)}});
    CHECK(line.ends_with("\n"));
    CHECK(is_utf8(line));
    CHECK(nlohmann::json::parse(line)["text"] == "a\xef\xbf\xbd");
}

TEST_CASE("control server: any bytes get a JSON error answer and the server goes on", "[control]") {
    Server s;
    const auto bad = talk(s.path, std::string("\xff\xfe{\n"));
    CHECK(s.alive());
    REQUIRE(is_utf8(bad));
    const auto bad_json = nlohmann::json::parse(bad);
    CHECK(bad_json["error"] == "bad request: not UTF-8 (byte 0)");

    const auto garbled = nlohmann::json::parse(talk(s.path, "{\"cmd\": \"st\n"));
    CHECK_THAT(garbled["error"].get<std::string>(), Catch::Contains("not JSON"));

    const auto from_handler = talk(s.path, "{\"cmd\":\"echo-bytes\"}\n");
    CHECK(is_utf8(from_handler));
    CHECK(s.alive());

    const auto ok = nlohmann::json::parse(talk(s.path, "{\"cmd\":\"stats\"}\n"));
    CHECK(ok["ok"] == "stats");
    CHECK(s.calls == 2);
}

TEST_CASE("control server: an overlong line is refused without reading it all", "[control]") {
    Server s;
    const auto answer = talk(s.path, std::string(1 << 20, 'x') + "\n");
    CHECK(s.alive());
    const auto j = nlohmann::json::parse(answer);
    CHECK_THAT(j["error"].get<std::string>(), Catch::Contains("longer than 4095 bytes"));
    CHECK(s.calls == 0);
    CHECK(nlohmann::json::parse(talk(s.path, "{\"cmd\":\"stats\"}\n"))["ok"] == "stats");
}

TEST_CASE("control server: idle clients are timed out and bounded in number", "[control]") {
    Server s;
    // kMaxSessions clients that connect and send half a line, never the newline.
    std::vector<std::future<std::string>> idle;
    for (std::size_t i = 0; i < kMaxSessions; ++i)
        idle.push_back(
            std::async(std::launch::async, [&] { return talk(s.path, "{\"cmd\":", false); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    // One more waits in the listen backlog until a session ends, then is served.
    const auto t0 = std::chrono::steady_clock::now();
    auto waiting =
        std::async(std::launch::async, [&] { return talk(s.path, "{\"cmd\":\"stats\"}\n"); });
    CHECK(waiting.wait_for(std::chrono::seconds(2)) == std::future_status::timeout);
    for (auto& f : idle) {
        const auto j = nlohmann::json::parse(f.get());
        CHECK_THAT(j["error"].get<std::string>(), Catch::Contains("no complete request line"));
    }
    CHECK(nlohmann::json::parse(waiting.get())["ok"] == "stats");
    const auto waited = std::chrono::steady_clock::now() - t0;
    CHECK(waited < kRequestTimeout + std::chrono::seconds(2));
    CHECK(s.alive());
    CHECK(nlohmann::json::parse(talk(s.path, "{\"cmd\":\"stats\"}\n"))["ok"] == "stats");
}
