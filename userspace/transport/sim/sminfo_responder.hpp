// Under ibsim the local SA's port claims IsSM (that is how ibsim hands it unsolicited requests),
// so the master polls it with SMInfo. We answer as a NOTACTIVE SM of priority 0: never a
// candidate for mastership.
#pragma once

#include "ib/bytes.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace localsa {

// The GetResp for an SMInfo Get SMP (LID-routed or directed), or nullopt when `smp` is not one.
std::optional<std::vector<std::uint8_t>> answer_sminfo(mad::Bytes smp, std::uint64_t port_guid);

} // namespace localsa
