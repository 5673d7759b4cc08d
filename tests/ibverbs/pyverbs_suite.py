#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Runs rdma-core's own pyverbs test suite (the copy python3-pyverbs ships in
/usr/share/doc/rdma-core/tests) on whatever libibverbs.so.1 the dynamic linker
finds first (OpenMRC's, through LD_LIBRARY_PATH), and judges the outcome
against what docs/IBVERBS.md ("rdma-core's test suite") says OpenMRC does:

  - no test may fail;
  - a test may error only if KNOWN_ERRORS names it (a capability OpenMRC
    does not have yet, with the reason), and a test KNOWN_ERRORS names must
    still error (once it passes, the list is out of date);
  - every skip gives a reason SKIP_REASONS lists;
  - every test MUST_PASS names passes (what works today keeps working).

    pyverbs_suite.py TESTS_COPY_DIR [run_tests.py arguments, e.g. --dev omrc0]

TESTS_COPY_DIR holds the suite's package as 'tests/' (uncompressed). Prints
one line per test, the counts (ran, passed, skipped by reason, errors) and
exits 0 when the judgement holds, 1 otherwise.
"""
import collections
import os
import re
import sys
import unittest

# Skip reasons, by the suite's own message, each with why OpenMRC cannot or
# does not run those tests. docs/IBVERBS.md lists the same categories.
SKIP_REASONS = [
    (r"non MLX5 device|not an MLX5 device|MLX5|mlx5", "mlx5 provider (DevX, DR, DC, crypto, ...): vendor-specific"),
    (r"non EFA device|EFA|efa", "EFA provider (SRD): vendor-specific"),
    (r"Device memory", "device memory: no NIC memory here"),
    (r"ODP", "on-demand paging: needs a NIC that faults pages in"),
    (r"net interface|rdma_cm|RDMA CM|rdmacm", "rdma_cm: needs a kernel netdev bound to the device"),
    (r"dmabuf|DmaBuf|dma-buf|/dev/dri|cuda|CUDA|GPU", "dma-buf and GPU memory"),
    (r"huge pages|Huge", "huge pages not allocated on this machine"),
    (r"PCI device must be passed", "VFIO: a PCI device is needed"),
    (r"Atomic", "atomics: not carried by OpenMRC"),
    (r"MW access|memory window|Memory Window|MW ", "memory windows: not carried by OpenMRC"),
    (r"UD QP|QP type 4|Create AH|AH is not supported", "UD QPs and address handles: OpenMRC is RC only"),
    (r"UC QP", "UC QPs: OpenMRC is RC only"),
    (r"Raw Packet|QP type 8", "raw packet QPs: needs a NIC's raw queues"),
    (r"XRC", "XRC: OpenMRC is RC only"),
    (r"Parent Domain", "parent domains: provider allocators"),
    (r"Extended QP is not supported|Create Extended CQ|Extended CQ is not supported",
     "atomic or UD QP ops (ibv_qp_ex; the bad-flow tests use UD QPs) and ibv_cq_ex: ibv_cq_ex not yet (issue 27), "
     "atomics and UD not carried"),
    (r"Rereg MR", "ibv_rereg_mr: not yet"),
    (r"real time", "device real-time clock: none"),
    (r"custom mr with additional access flags", "MR access flags beyond local/remote write and read"),
    (r"All gid indices populated", "one GID per port: the bad-flow index check cannot run"),
    (r"No IB devices", "no device configured"),
    (r"Importing a device", "ibv_import_device and shared PDs: need a kernel device"),
]

# Tests that error today because OpenMRC lacks what they use, each with why.
KNOWN_ERRORS = {}

# What passes today on loopback and udp devices.
MUST_PASS = {
    "tests.test_cq.CQAPITest.test_create_cq",
    "tests.test_cq.CQAPITest.test_create_cq_bad_flow",
    "tests.test_cq.CQAPITest.test_create_cq_with_comp_channel",
    "tests.test_cq_events.CqEventsTestCase.test_cq_events_rc",
    "tests.test_cqex.CQEXAPITest.test_create_cq_ex",
    "tests.test_device.DeviceTest.test_dev_list",
    "tests.test_device.DeviceTest.test_open_dev",
    "tests.test_device.DeviceTest.test_phys_port_cnt_ex",
    "tests.test_device.DeviceTest.test_query_device",
    "tests.test_device.DeviceTest.test_query_device_ex",
    "tests.test_device.DeviceTest.test_query_gid",
    "tests.test_device.DeviceTest.test_query_gid_ex",
    "tests.test_device.DeviceTest.test_query_gid_table",
    "tests.test_device.DeviceTest.test_query_gid_table_bad_flow",
    "tests.test_device.DeviceTest.test_query_pkey",
    "tests.test_device.DeviceTest.test_query_port",
    "tests.test_device.DeviceTest.test_query_port_bad_flow",
    "tests.test_fork.ForkAPITest.test_is_fork_initialized",
    "tests.test_mr.MRTest.test_reg_mr_bad_flags",
    "tests.test_pd.PDTest.test_alloc_pd",
    "tests.test_pd.PDTest.test_dealloc_pd",
    "tests.test_pd.PDTest.test_destroy_pd_twice",
    "tests.test_pd.PDTest.test_multiple_pd_creation",
    "tests.test_qp.QPTest.test_create_rc_qp_ex_no_attr",
    "tests.test_qp.QPTest.test_create_rc_qp_ex_with_attr",
    "tests.test_qp.QPTest.test_create_rc_qp_no_attr",
    "tests.test_qp.QPTest.test_create_rc_qp_with_attr",
    "tests.test_qp.QPTest.test_query_rc_qp",
    "tests.test_qpex.QpExTestCase.test_qp_ex_rc_rdma_read",
    "tests.test_qpex.QpExTestCase.test_qp_ex_rc_rdma_read_zero_size",
    "tests.test_qpex.QpExTestCase.test_qp_ex_rc_rdma_write",
    "tests.test_qpex.QpExTestCase.test_qp_ex_rc_rdma_write_imm",
    "tests.test_qpex.QpExTestCase.test_qp_ex_rc_rdma_write_zero_length",
    "tests.test_qpex.QpExTestCase.test_qp_ex_rc_send",
    "tests.test_qpex.QpExTestCase.test_qp_ex_rc_send_imm",
    "tests.test_relaxed_ordering.RoTestCase.test_ro_rc_traffic",
}


class Recorder(unittest.TextTestResult):
    """TextTestResult that also keeps each test's outcome by id."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.outcome = {}  # test id -> (kind, detail)

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcome[test.id()] = ("pass", "")

    def addError(self, test, err):
        super().addError(test, err)
        self.outcome[test.id()] = ("error", self._exc_info_to_string(err, test))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcome[test.id()] = ("fail", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcome[test.id()] = ("skip", reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.outcome[test.id()] = ("pass", "expected failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.outcome[test.id()] = ("fail", "unexpected success")


def skip_category(reason):
    for pattern, why in SKIP_REASONS:
        if re.search(pattern, reason):
            return why
    return None


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    root = os.path.abspath(sys.argv[1])
    sys.path[:0] = [root, os.path.join(root, "tests")]
    sys.argv = ["run_tests.py"] + sys.argv[2:]
    from args_parser import parser  # the suite's own: --dev, --port, --gid
    parser.parse_args()
    import tests  # loads every tests/test_*.py, as run_tests.py does
    suite = unittest.defaultTestLoader.loadTestsFromModule(tests)
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=Recorder)
    result = runner.run(suite)
    outcome = result.outcome

    problems = []
    kinds = collections.Counter(kind for kind, _ in outcome.values())
    skipped = collections.Counter()
    for tid, (kind, detail) in sorted(outcome.items()):
        if kind == "fail":
            problems.append(f"{tid} failed")
        elif kind == "error" and tid not in KNOWN_ERRORS:
            problems.append(f"{tid} errored, and KNOWN_ERRORS does not name it")
        elif kind == "skip":
            why = skip_category(detail)
            if why is None:
                problems.append(f"{tid} skipped for a reason SKIP_REASONS does not list: {detail!r}")
            else:
                skipped[why] += 1
    for tid, why in KNOWN_ERRORS.items():
        kind = outcome.get(tid, ("missing", ""))[0]
        if kind != "error":
            problems.append(f"{tid} is a known error ({why}) but {kind}: update KNOWN_ERRORS")
    for tid in sorted(MUST_PASS):
        kind = outcome.get(tid, ("missing", ""))[0]
        if kind != "pass":
            problems.append(f"{tid} must pass but {kind}")

    print(f"\nrdma-core pyverbs suite: ran {result.testsRun}, passed {kinds['pass']}, failed {kinds['fail']}, "
          f"errors {kinds['error']} (known {sum(1 for t in KNOWN_ERRORS if outcome.get(t, ('',))[0] == 'error')}), "
          f"skipped {kinds['skip']}")
    for why, n in skipped.most_common():
        print(f"  skipped {n:3d}: {why}")
    for tid, why in sorted(KNOWN_ERRORS.items()):
        print(f"  known error: {tid}: {why}")
    if os.environ.get("PYVERBS_LIST_PASSES"):  # to refresh MUST_PASS
        for tid, (kind, _) in sorted(outcome.items()):
            if kind == "pass":
                print(f"  passed: {tid}")
    if result.testsRun < 200:
        problems.append(f"only {result.testsRun} tests ran: the suite did not load whole")
    for p in problems:
        print(f"PROBLEM: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
