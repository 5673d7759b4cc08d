// SPDX-License-Identifier: BSD-3-Clause
// The opaque handles of the C API (include/omrc/omrc.h): each owns its verbs
// object and counts its live children, so that releasing a parent that still
// has some returns EBUSY instead of reaching the verbs destructors' abort.
// Used on the device's owning thread only, as the objects they hold.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "omrc/config.hpp"
#include "omrc/omrc.h"
#include "omrc/verbs.hpp"

struct omrc_device {
    std::unique_ptr<omrc::Device> dev;
    omrc::QpDefaults qp_defaults{};  ///< of its configuration file; QpDefaults{} otherwise
    std::uint32_t live_pds = 0;
    std::uint32_t live_cqs = 0;
    /// Live SRQ handles by their verbs object, for the async events that name them.
    std::unordered_map<const omrc::Srq*, omrc_srq*> srqs;
    /// Live QP handles by their verbs object, for the CM events that name them.
    std::unordered_map<const omrc::Qp*, omrc_qp*> qps;
};

struct omrc_pd {
    std::unique_ptr<omrc::Pd> pd;
    omrc_device* dev = nullptr;
    std::uint32_t live_mrs = 0;
    std::uint32_t live_qps = 0;
    std::uint32_t live_srqs = 0;
};

struct omrc_srq {
    std::unique_ptr<omrc::Srq> srq;
    omrc_pd* pd = nullptr;
    std::uint32_t live_qps = 0;
    std::vector<omrc::Sge> sge_scratch;
    std::vector<omrc::RecvWr> recv_scratch;
};

struct omrc_mr {
    std::unique_ptr<omrc::Mr> mr;
    omrc_pd* pd = nullptr;
};

struct omrc_cq {
    std::unique_ptr<omrc::Cq> cq;
    omrc_device* dev = nullptr;
    std::uint32_t live_qps = 0;  ///< one per use: a QP whose send and recv CQ is this one counts twice
};

struct omrc_qp {
    std::unique_ptr<omrc::Qp> qp;
    omrc_pd* pd = nullptr;
    omrc_cq* send_cq = nullptr;
    omrc_cq* recv_cq = nullptr;
    omrc_srq* srq = nullptr;
    // The C work requests converted for Qp::post_send / post_recv, reused so
    // that posting does not allocate once they have grown.
    std::vector<omrc::Sge> sge_scratch;
    std::vector<omrc::SendWr> send_scratch;
    std::vector<omrc::RecvWr> recv_scratch;
};
