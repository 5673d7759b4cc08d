// SPDX-License-Identifier: BSD-3-Clause
#include "drivers/dpdk/ibverbs_clash.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <iterator>
#include <sstream>

namespace omrc::dpdk {

namespace {

std::string read_line(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::string s;
    std::getline(in, s);
    return s;
}

/// OpenMRC's libibverbs.so.1: in OpenMRC's ibverbs directory
/// (<libdir>/openmrc/ibverbs installed, <build>/lib/openmrc/ibverbs in the
/// tree), or anywhere when the file needs libomrc.so (its dynamic section
/// names it; rdma-core's does not).
bool is_openmrc_ibverbs(const std::filesystem::path& lib) {
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::weakly_canonical(lib.parent_path(), ec);
    const std::filesystem::path& d = ec ? lib.parent_path() : real;
    if (d.filename() == "ibverbs" && d.parent_path().filename() == "openmrc") return true;
    std::ifstream in(lib, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return bytes.find("libomrc.so") != std::string::npos;
}

int find_loaded(dl_phdr_info* info, std::size_t, void* data) {
    const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
    const std::filesystem::path p(name);
    if (p.filename() == "libibverbs.so.1" || p.filename().string().rfind("libibverbs.so", 0) == 0) {
        *static_cast<std::string*>(data) = name;
        return 1;
    }
    return 0;
}

}  // namespace

std::vector<PciDevice> pci_devices(const std::string& root) {
    std::vector<PciDevice> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
        PciDevice d;
        d.address = e.path().filename().string();
        d.vendor = read_line(e.path() / "vendor");
        std::error_code lec;
        const std::filesystem::path drv = std::filesystem::read_symlink(e.path() / "driver", lec);
        if (!lec) d.driver = drv.filename().string();
        out.push_back(std::move(d));
    }
    std::sort(out.begin(), out.end(), [](const PciDevice& a, const PciDevice& b) { return a.address < b.address; });
    return out;
}

std::vector<std::string> mlx5_devices_probed(const std::vector<PciDevice>& devices,
                                             const std::vector<std::string>& eal_args) {
    std::vector<std::string> allowed, blocked;
    bool no_pci = false;
    for (std::size_t i = 0; i < eal_args.size(); ++i) {
        const std::string& a = eal_args[i];
        const bool has_next = i + 1 < eal_args.size();
        auto value = [&](const std::string& opt) -> std::string {
            if (a == opt && has_next) return eal_args[i + 1];
            if (a.rfind(opt + "=", 0) == 0) return a.substr(opt.size() + 1);
            return {};
        };
        if (a == "--no-pci") no_pci = true;
        for (const char* opt : {"-a", "--allow", "-w", "--pci-whitelist"})
            if (std::string v = value(opt); !v.empty()) allowed.push_back(v.substr(0, v.find(',')));
        for (const char* opt : {"-b", "--block", "--pci-blacklist"})
            if (std::string v = value(opt); !v.empty()) blocked.push_back(v.substr(0, v.find(',')));
    }
    std::vector<std::string> out;
    if (no_pci) return out;
    // "17:00.0" names 0000:17:00.0 too.
    auto named = [](const std::vector<std::string>& list, const std::string& addr) {
        return std::any_of(list.begin(), list.end(), [&](const std::string& n) {
            return n == addr || (addr.size() > n.size() && addr.compare(addr.size() - n.size(), n.size(), n) == 0 &&
                                 addr[addr.size() - n.size() - 1] == ':');
        });
    };
    for (const PciDevice& d : devices) {
        if (d.vendor != "0x15b3" || d.driver != "mlx5_core") continue;
        if (!allowed.empty() && !named(allowed, d.address)) continue;
        if (named(blocked, d.address)) continue;
        out.push_back(d.address);
    }
    return out;
}

std::string openmrc_ibverbs_path(const std::string& loaded, const std::string& ld_library_path) {
    // Loaded already: the soname is taken, whatever LD_LIBRARY_PATH says.
    if (!loaded.empty()) return is_openmrc_ibverbs(loaded) ? loaded : "";
    // Not loaded: the PMD's dlopen will search LD_LIBRARY_PATH first.
    std::stringstream ss(ld_library_path);
    std::string dir;
    while (std::getline(ss, dir, ':')) {
        if (dir.empty()) continue;
        std::error_code ec;
        const std::filesystem::path lib = std::filesystem::path(dir) / "libibverbs.so.1";
        if (!std::filesystem::exists(lib, ec)) continue;
        return is_openmrc_ibverbs(lib) ? lib.string() : "";  // the first one found is the one loaded
    }
    return "";
}

std::string openmrc_ibverbs_path() {
    std::string loaded;
    dl_iterate_phdr(&find_loaded, &loaded);
    const char* env = std::getenv("LD_LIBRARY_PATH");
    return openmrc_ibverbs_path(loaded, env != nullptr ? env : "");
}

int check_ibverbs_clash(const std::vector<std::string>& eal_args, std::string& error) {
    const char* root_env = std::getenv("OMRC_SYSFS_PCI_ROOT");
    const std::string root = root_env != nullptr ? root_env : "/sys/bus/pci/devices";
    const std::vector<std::string> mlx5 = mlx5_devices_probed(pci_devices(root), eal_args);
    if (mlx5.empty()) return 0;
    const std::string lib = openmrc_ibverbs_path();
    if (lib.empty()) return 0;
    error = fmt::format(
        "ConnectX port{} {} (mlx5) cannot come up in this process: DPDK's mlx5 driver needs rdma-core's "
        "libibverbs.so.1, and the one here is OpenMRC's ({}). Run the program without OpenMRC's libibverbs "
        "(without its directory on LD_LIBRARY_PATH) and use OpenMRC through its own API (omrc::Device, "
        "libomrc_dpdk) or NCCL's net plugin (libnccl-net-omrc.so); or leave the ConnectX ports out (-b, --no-pci)",
        mlx5.size() > 1 ? "s" : "", fmt::join(mlx5, ", "), lib);
    return ENOTSUP;
}

}  // namespace omrc::dpdk
