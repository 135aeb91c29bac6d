#include "control/client.hpp"

#include <boost/asio/buffers_iterator.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

#include <stdexcept>

namespace localsa::control {

namespace asio = boost::asio;
using stream = asio::local::stream_protocol;

std::string default_socket_path(const std::string& ca, int port) {
    return std::string(kSocketDir) + "/" + ca + "-" + std::to_string(port) + ".sock";
}

nlohmann::json control_request(const std::string& path, const nlohmann::json& request) {
    asio::io_context io;
    stream::socket socket(io);
    boost::system::error_code connect_error;
    socket.connect(stream::endpoint(path), connect_error);
    if (connect_error)
        throw std::runtime_error("cannot connect to the control socket " + path + ": " +
                                 connect_error.message() +
                                 (connect_error == boost::system::errc::permission_denied
                                      ? " (it is private to root and the daemon's user)"
                                      : ""));
    const auto line = request.dump() + "\n";
    asio::write(socket, asio::buffer(line));
    asio::streambuf in;
    boost::system::error_code ec;
    asio::read(socket, in, ec); // until the daemon closes
    if (ec && ec != asio::error::eof)
        throw boost::system::system_error(ec);
    std::string text{asio::buffers_begin(in.data()), asio::buffers_end(in.data())};
    if (text.empty())
        throw std::runtime_error("the daemon at " + path + " closed the connection unanswered");
    return nlohmann::json::parse(text);
}

} // namespace localsa::control
