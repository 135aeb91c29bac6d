// The control socket's protocol, shared by localsad's server and its clients: a unix stream
// socket (mode 0600), one JSON request line per connection, one JSON answer.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace localsa::control {

// Where the daemons' sockets live unless --control says otherwise.
inline constexpr const char* kSocketDir = "/run/localsa";

// The default socket of the daemon serving `ca` port `port`.
std::string default_socket_path(const std::string& ca, int port);

// Sends one request, returns the answer; throws std::runtime_error with the path on failure.
nlohmann::json control_request(const std::string& path, const nlohmann::json& request);

} // namespace localsa::control
