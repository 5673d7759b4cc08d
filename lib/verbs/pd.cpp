// SPDX-License-Identifier: BSD-3-Clause
// Pd and Mr: protection domains and memory registration.
#include <cerrno>
#include <cstring>
#include <thread>

#include "log/log.hpp"
#include "verbs/device_core.hpp"

namespace omrc {

namespace {

void set_err(int* err, int value) {
    if (err != nullptr) *err = value;
}

/// Bounded wait for the driver to release frames that may reference memory
/// about to be deregistered (zero-copy drivers; copying drivers release at once).
constexpr int kReleaseWaitPasses = 1 << 20;

}  // namespace

Pd::~Pd() {
    if (children_ != 0) detail::abort_live_children("Pd", children_);
    --core_->children;
}

std::unique_ptr<Mr> Pd::reg_mr(void* addr, std::size_t length, std::uint32_t access, int* err) {
    if (addr == nullptr) {
        set_err(err, EINVAL);
        return nullptr;
    }
    verbs::MrEntry e;
    {
        // The workers' placement reads the table: it changes while they are parked.
        const detail::WorkerControl parked(*core_);
        if (const int rc = core_->mrs.add(handle_, reinterpret_cast<std::uintptr_t>(addr), length, access, e); rc != 0) {
            set_err(err, rc);
            return nullptr;
        }
        // A driver that lets a NIC read the payload maps the memory now
        // (else it copies frames from it: the registration stands).
        if (const int rc = core_->first_queue().register_memory(addr, length); rc != 0)
            log::logger().debug("MR of {} B: driver '{}' does not map it ({}): its frames are copied", length,
                                core_->driver_name, std::strerror(rc));
    }
    auto mr = std::unique_ptr<Mr>(new Mr());
    mr->core_ = core_;
    mr->pd_ = this;
    mr->addr_ = e.addr;
    mr->length_ = length;
    mr->access_ = access;
    mr->lkey_ = e.lkey;
    mr->rkey_ = e.rkey;
    mr->registered_ = true;
    ++children_;
    set_err(err, 0);
    return mr;
}

Mr::~Mr() {
    if (registered_) (void)deregister();
}

int Mr::deregister() {
    if (!registered_) return EINVAL;
    {
        // From here on placement refuses this rkey: no incoming byte lands here.
        const detail::WorkerControl parked(*core_);
        (void)core_->mrs.remove(rkey_);
    }
    registered_ = false;
    --pd_->children_;
    // Frames the progress loops keep aside already own a copy of their
    // payload; frames handed to a driver queue may still point here until it
    // releases them.
    for (auto& w : core_->workers) {
        for (int pass = 0;; ++pass) {
            bool released = false;
            {
                const detail::WorkerControl parked(*core_, *w);
                released = w->queue->tx_release_count() >= w->loop->tx_accepted();
                if (!released && pass == kReleaseWaitPasses)
                    log::logger().error("MR deregistration: driver '{}' (worker {}) still holds {} transmitted frames",
                                        core_->driver_name, w->index,
                                        w->loop->tx_accepted() - w->queue->tx_release_count());
                if (!released && !w->threaded()) w->loop->run_once(core_->now(), *w);
            }
            if (released || pass == kReleaseWaitPasses) break;
            if (w->threaded()) std::this_thread::yield();  // the worker's own passes release them
        }
    }
    // No frame references the memory any more: the driver unmaps it.
    const detail::WorkerControl parked(*core_);
    core_->first_queue().unregister_memory(reinterpret_cast<const void*>(addr_), length_);
    return 0;
}

}  // namespace omrc
