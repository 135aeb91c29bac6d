// What ibsim's MAD layer (umad2sim) does unlike the kernel's, absorbed between the transport and
// the dispatcher so that the engine only ever sees MADs as ib_umad delivers them:
//  - umad2sim hands over a request with the length its sender gave; ib_umad always hands over
//    a whole 256-byte MAD. Short requests are padded here.
//  - ibsim hands unsolicited MADs only to a port that claims IsSM, so under ibsim localsad
//    claims it (UmadOptions::claim_issm) and the master then polls the port with SMInfo. It is
//    answered here, as a NOTACTIVE SM of priority 0: never a candidate for mastership.
// localsad puts SimQuirks in front of its dispatcher only under ibsim (`--sim`).
#pragma once

#include "ib/bytes.hpp"
#include "transport/transport.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace localsa::transport::sim {

// True when this process runs under umad2sim (ibsim's client library, preloaded).
bool umad2sim_loaded();

// The GetResp for an SMInfo Get SMP (LID-routed or directed), or nullopt when `smp` is not one.
std::optional<std::vector<std::uint8_t>> answer_sminfo(mad::Bytes smp, std::uint64_t port_guid);

// An InboundHandler in front of another: answers SMInfo through `transport`, pads short
// requests, hands everything else on unchanged.
class SimQuirks {
public:
    SimQuirks(MadTransport& transport, InboundHandler next)
        : transport_(transport), next_(std::move(next)) {}

    void operator()(const InboundMad& mad);

    std::uint64_t sminfo_answered() const { return sminfo_answered_; }
    std::uint64_t requests_padded() const { return requests_padded_; }

private:
    MadTransport& transport_;
    InboundHandler next_;
    // Keeps its capacity: no allocation per padded request.
    InboundMad padded_;
    bool padded_busy_ = false;
    std::uint64_t sminfo_answered_ = 0;
    std::uint64_t requests_padded_ = 0;
};

} // namespace localsa::transport::sim
