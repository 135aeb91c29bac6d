// TID and header rewriting between the kernel MAD layer and ibsim.
//
// ibsim routes a response to the client whose index sits in the TID's upper 16 bits and
// overwrites those bits with the sender's index on every request. The kernel MAD layer
// matches responses by the whole TID, so the relay restores the bits it had. RMPP makes
// the requester send ACK/STOP/ABORT with the response's method and TID back to the
// responder; ibsim would route them by the TID to the requester's own client and drop
// them. Relays therefore stamp their client index into the common header's reserved
// field (bytes 18-19) of every GMP response: the requester learns the responder's index
// and addresses its ACKs to it; the responder restores the TID the transfer had. The
// reserved field is cleared before a MAD reaches the kernel.
//
// Directed-route SMPs: ibsim wants the hop pointer 0 on everything it receives and
// leaves it there in answers; the kernel's SMI checks want it as a real wire leaves it.
#pragma once

#include <chrono>
#include <cstdint>
#include <unordered_map>

namespace simhca_relay {

class TidTranslator {
public:
    explicit TidTranslator(int client_id) : my_id_(client_id) {}

    // Rewrite a MAD the kernel sends (256 bytes).
    void outgoing(std::uint8_t* mad);
    // Rewrite a MAD arriving from ibsim before the kernel sees it.
    void incoming(std::uint8_t* mad);

    void expire(std::chrono::seconds older_than);
    std::size_t pending() const { return mine_.size(); }

private:
    struct Entry {
        std::uint16_t orig_top;
        int peer; // responder's client index, -1 until learned
        std::chrono::steady_clock::time_point when;
    };
    int my_id_;
    std::unordered_map<std::uint64_t, Entry> mine_; // key: TID low 48 bits
};

} // namespace simhca_relay
