#include "loss.hpp"

#include <fstream>

namespace simhca_relay {

bool LossInjector::drop(const std::uint8_t* mad) {
    if (rate_ <= 0.0)
        return false;
    const std::uint8_t mgmt_class = mad[1];
    if (mgmt_class == 0x01 || mgmt_class == 0x81)
        return false;
    if (uniform_(rng_) >= rate_)
        return false;
    ++dropped_;
    return true;
}

bool LossInjector::reload_from(const std::string& path) {
    std::ifstream in(path);
    double rate = 0;
    if (!in || !(in >> rate) || rate < 0.0 || rate > 1.0 || rate == rate_)
        return false;
    rate_ = rate;
    return true;
}

} // namespace simhca_relay
