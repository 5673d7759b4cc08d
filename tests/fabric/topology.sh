# SPDX-License-Identifier: BSD-3-Clause
# Sourced by usid_clos.sh: builds and removes a multi-plane two-tier Clos of
# Linux SRv6 routers in network namespaces (docs/FABRIC-TEST.md has the
# picture).
#
# Numbering follows lib/routing/fabric.hpp (docs/PROTOCOL.md §7.4):
#   block fcbb:0000 (32 bits), then 16-bit uSIDs
#   uSID = (plane+1)<<12 | role<<10 | index   role 0 host port, 1 T0, 2 T1
# Host h sits on T0 h (hosts_per_t0 = 1) at T0 port 0 in every plane, so its
# NIC address on plane p is fcbb:0:<(p+1)<<12>:: and a packet from host 0 to
# host 1 carries fcbb:0:<T0 0>:<T1 j>:<T0 1>:<port 0>:: with j from the EV.
#
# Every router runs the kernel's uN behaviour on its own /48
#   ip -6 route add fcbb:0:<me>::/48 encap seg6local action End flavors next-csid lblen 32 nflen 16 dev down0
# (shift the uSIDs by 16 bits, look the result up again) and static routes to
# its neighbours' /48s via link-local next hops with permanent neighbour
# entries: no routing daemon, no neighbour discovery.
#
# Namespaces (FAB_PREFIX unique per run):
#   $FAB_PREFIX-h          both hosts' NIC ports: veths h<h>p<p> (IPv6 off: no kernel noise)
#   $FAB_PREFIX-p<p>a<i>   T0 i of plane p: down0 (to its host), up<j> (to T1 j)
#   $FAB_PREFIX-p<p>b<j>   T1 j of plane p: down<i> (to T0 i)

FAB_PLANES=${FAB_PLANES:-2}
FAB_T0=${FAB_T0:-2}
FAB_T1=${FAB_T1:-2}
FAB_HOSTS=$FAB_T0          # hosts_per_t0 = 1: host h on T0 h
FAB_MTU=${FAB_MTU:-9000}
FAB_BLOCK=fcbb:0           # 0xFCBB0000 as the first two address groups
FAB_NAMESPACES=()

fab_ns_hosts() { echo "$FAB_PREFIX-h"; }
fab_ns_t0() { echo "$FAB_PREFIX-p$1a$2"; }   # plane, T0 index
fab_ns_t1() { echo "$FAB_PREFIX-p$1b$2"; }   # plane, T1 index

# uSID as 4 hex digits: plane role index
fab_usid() { printf '%x' $(( (($1 + 1) << 12) | ($2 << 10) | $3 )); }
fab_prefix() { echo "$FAB_BLOCK:$(fab_usid "$1" "$2" "$3")::/48"; }

# Fixed MACs (locally administered), unique within the run:
#   02:0f:<plane>:<node>:<port>:00   node 0x10+i = T0 i, 0x20+j = T1 j, 0xa0+h = host h
#   port 0x00+k = down k, 0x10+j = up j
fab_mac() { printf '02:0f:%02x:%02x:%02x:00' "$1" "$2" "$3"; }
fab_mac_host() { fab_mac "$2" $((0xa0 + $1)) 0; }            # host, plane
fab_mac_t0_down() { fab_mac "$1" $((0x10 + $2)) 0; }         # plane, T0 (its port to the host)
fab_mac_t0_up() { fab_mac "$1" $((0x10 + $2)) $((0x10 + $3)); }  # plane, T0, T1
fab_mac_t1_down() { fab_mac "$1" $((0x20 + $2)) "$3"; }      # plane, T1, T0

# Host port veth (in the hosts namespace) of host h on plane p.
fab_host_if() { echo "h$1p$2"; }

fab_sysctl() {  # namespace, key=value...
    local ns=$1
    shift
    ip netns exec "$ns" sysctl -qw "$@" >/dev/null
}

fab_add_ns() {
    ip netns add "$1" || return 1
    FAB_NAMESPACES+=("$1")
    ip -n "$1" link set lo up
}

# veth between two namespaces with fixed MACs, MTU and state up.
fab_link() {  # nsA ifA macA nsB ifB macB
    ip link add name "$2" netns "$1" address "$3" mtu "$FAB_MTU" type veth \
        peer name "$5" netns "$4" address "$6" mtu "$FAB_MTU" || return 1
    ip -n "$1" link set "$2" up && ip -n "$4" link set "$5" up
}

# Static route of a /48 through a link-local next hop with a permanent neighbour.
fab_route_via() {  # ns prefix dev nexthop-lladdr nexthop-mac
    ip -n "$1" -6 neigh replace "$4" lladdr "$5" dev "$3" nud permanent &&
        ip -n "$1" -6 route add "$2" via "$4" dev "$3"
}

fab_un() {  # ns prefix dev: uN (End with NEXT-C-SID) on the router's own uSID
    # The device only anchors the route (a route through lo would be a reject route).
    ip -n "$1" -6 route add "$2" encap seg6local action End flavors next-csid lblen 32 nflen 16 count dev "$3"
}

fab_build() {
    local p i j h ns
    fab_add_ns "$(fab_ns_hosts)" || return 1
    # No IPv6 on the hosts' ports: the kernel there must neither answer nor
    # originate anything (ND, MLD); OpenMRC owns those ports.
    fab_sysctl "$(fab_ns_hosts)" net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    for ((p = 0; p < FAB_PLANES; p++)); do
        for ((i = 0; i < FAB_T0; i++)); do fab_add_ns "$(fab_ns_t0 $p $i)" || return 1; done
        for ((j = 0; j < FAB_T1; j++)); do fab_add_ns "$(fab_ns_t1 $p $j)" || return 1; done
    done
    for ((p = 0; p < FAB_PLANES; p++)); do
        for ns in $(for ((i = 0; i < FAB_T0; i++)); do fab_ns_t0 $p $i; done) \
                  $(for ((j = 0; j < FAB_T1; j++)); do fab_ns_t1 $p $j; done); do
            fab_sysctl "$ns" net.ipv6.conf.all.forwarding=1 net.ipv6.conf.default.forwarding=1 \
                net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0 \
                net.ipv6.conf.default.accept_ra=0 net.ipv6.conf.all.seg6_enabled=1 \
                net.ipv6.conf.default.seg6_enabled=1 net.ipv6.conf.default.router_solicitations=0 || return 1
        done
        # Host ports.
        for ((h = 0; h < FAB_HOSTS; h++)); do
            fab_link "$(fab_ns_t0 $p $h)" down0 "$(fab_mac_t0_down $p $h)" \
                "$(fab_ns_hosts)" "$(fab_host_if $h $p)" "$(fab_mac_host $h $p)" || return 1
        done
        # T0 i up j <-> T1 j down i. Link-local addresses: fe80::1 on the upper end, fe80::2 on the lower.
        for ((i = 0; i < FAB_T0; i++)); do
            for ((j = 0; j < FAB_T1; j++)); do
                fab_link "$(fab_ns_t0 $p $i)" "up$j" "$(fab_mac_t0_up $p $i $j)" \
                    "$(fab_ns_t1 $p $j)" "down$i" "$(fab_mac_t1_down $p $j $i)" || return 1
                ip -n "$(fab_ns_t0 $p $i)" -6 addr add fe80::2/64 dev "up$j" nodad || return 1
                ip -n "$(fab_ns_t1 $p $j)" -6 addr add fe80::1/64 dev "down$i" nodad || return 1
            done
        done
        # Routes. T0 i: its own uN, its host's port, every T1.
        for ((i = 0; i < FAB_T0; i++)); do
            ns=$(fab_ns_t0 $p $i)
            ip -n "$ns" -6 addr add fe80::1/64 dev down0 nodad || return 1
            fab_un "$ns" "$(fab_prefix $p 1 $i)" down0 || return 1
            fab_route_via "$ns" "$(fab_prefix $p 0 0)" down0 fe80::2 "$(fab_mac_host $i $p)" || return 1
            for ((j = 0; j < FAB_T1; j++)); do
                fab_route_via "$ns" "$(fab_prefix $p 2 $j)" "up$j" fe80::1 "$(fab_mac_t1_down $p $j $i)" || return 1
            done
        done
        # T1 j: its own uN, every T0.
        for ((j = 0; j < FAB_T1; j++)); do
            ns=$(fab_ns_t1 $p $j)
            fab_un "$ns" "$(fab_prefix $p 2 $j)" down0 || return 1
            for ((i = 0; i < FAB_T0; i++)); do
                fab_route_via "$ns" "$(fab_prefix $p 1 $i)" "down$i" fe80::2 "$(fab_mac_t0_up $p $i $j)" || return 1
            done
        done
    done
}

# Packets the uN route of a router has processed.
fab_un_packets() {  # ns prefix
    ip -n "$1" -6 -s route show "$2" | sed -n 's/.* packets \([0-9]*\) .*/\1/p'
}

fab_destroy() {
    local ns
    for ns in "${FAB_NAMESPACES[@]}"; do
        # Anything still running in the namespace keeps it (and its veths) alive.
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
    FAB_NAMESPACES=()
}

# Prints the topology: namespaces, interfaces with MACs, routes.
fab_dump() {
    local ns
    for ns in "${FAB_NAMESPACES[@]}"; do
        echo "== $ns"
        ip -n "$ns" -br link show | grep -v '^lo '
        ip -n "$ns" -6 route show | grep -v '^fe80\|^multicast\|^ff00'
    done
}
